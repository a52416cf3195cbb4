package tooladapter

import (
	"fmt"
	"strings"
)

// memoryProtocol is the guidance that the memory tool documentation asks to give a model
// with the memory tool, in our words.
const memoryProtocol = `You have a persistent memory: the folder /memories, which you reach with the memory tool. It outlives this conversation, and every change to it is kept as a version.

Memory protocol:
1. Before you start on a task, view /memories and read what is relevant: earlier sessions may have left progress, decisions and lessons there.
2. As you work, record what a later session would need (progress, decisions, facts learned, open questions) in small, well-named files. Update a file rather than writing a second one on the same subject, and delete what has become wrong.
3. Assume that your context may be cleared at any moment: whatever is not written to /memories is lost.
Keep secrets (keys, passwords, tokens) and needless personal data out of memory.`

// SystemPrompt returns the text for the system prompt of a model that uses the session's
// tools: the memory protocol, and what each attached store is, where it is seen, whether
// it may be changed, and the session's prompt for it.
func (s *Session) SystemPrompt() string {
	var b strings.Builder
	b.WriteString(memoryProtocol)
	b.WriteString("\n\nMemory stores in this session:")
	for _, m := range s.mounts {
		access := "read and write"
		switch m.access {
		case ReadOnly:
			access = "read only: you cannot change it"
		case Propose:
			access = "read and write: your changes are proposed, and reach the others once a person approves them"
		}
		fmt.Fprintf(&b, "\n- %s/ holds the memory store %q (%s).", m.root(), m.info.Name, access)
		if m.info.Description != "" {
			fmt.Fprintf(&b, " Description: %s", m.info.Description)
		}
		if m.prompt != "" {
			fmt.Fprintf(&b, "\n  For this session: %s", m.prompt)
		}
	}
	return b.String()
}
