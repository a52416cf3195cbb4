package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
	"github.com/gitmem/gitmem/tooladapter"
)

func init() { register(newAgentCmd) }

// defaultAgentModel is the model of "gitmem agent" without --model.
const defaultAgentModel = anthropic.ModelClaudeSonnet5_5

// agentOptions are the flags of "gitmem agent".
type agentOptions struct {
	stores    []string
	model     string
	maxTurns  int
	maxTokens int64
	sessionID string
	search    bool
	watch     bool
	quiet     time.Duration
}

func newAgentCmd(a *app) *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent --store STORE[:read_only][:PROMPT] [--store ...] [flags] TASK...",
		Short: "Run Claude on a task, with stores as its memory (the memory tool)",
		Long: `Runs an agent loop: Claude works on TASK with the memory tool (memory_20250818) over the
attached stores. Every change it makes is a commit in a store, recorded as made by this run's
session (a session_actor sesn_…), so "gitmem log STORE" shows what the run did.

With one store, Claude sees it as /memories; with several, each is a folder /memories/<slug>/,
the store's name in lower case with each run of other characters made "-".

--store STORE[:ACCESS][:PROMPT] attaches a store; repeat it for up to 8 stores.
  STORE    the store's id, or its name (a name that contains ':' must be given by id)
  ACCESS   read_write (the default) or read_only
  PROMPT   what the store is for in this task, at most 4,096 characters; it may contain ':'.
           A prompt that is just "read_only" or "read_write" needs the access before it.

The loop sends the task to the Messages API, runs the tool calls that Claude makes, sends the
results back, and repeats until Claude ends its turn; after --max-turns requests it stops with
an error. Claude's text goes to stdout; the session id and one line per tool call go to stderr.
Context editing (clear_tool_uses_20250919) is on; it never clears the memory tool's results.

Needs an API key in ANTHROPIC_API_KEY. The SDK also reads ANTHROPIC_BASE_URL, to send the
requests elsewhere. While "gitmem serve" holds the data directory (or with --server), the
server runs the tool calls (its /mcp, with GITMEM_API_KEY) and --search uses its index; else
the data directory stays open while the agent runs.

--watch keeps the agent on the stores: after the task's run it follows their event streams,
and when others (people, other agents, a git push, a sync) change them, it runs again with
the task and the list of what changed, until Ctrl-C. Its own session's writes do not wake it.
Changes that come close together (within --watch-quiet) make one run. It needs the server
(gitmem serve, here or with --server): while the agent holds the data directory, nobody else
can change the stores.`,
		Example: `  export ANTHROPIC_API_KEY=sk-ant-...
  gitmem agent --store notes "Plan the move of the billing service to Postgres"
  gitmem agent --store notes --store "team wiki:read_only:Conventions: follow them" "Review the plan"
  gitmem agent --store notes --search --max-turns 50 "What did we decide about retries?"
  gitmem log notes      # the versions of the run are BY its session id
  gitmem agent --store notes --watch "Keep /summary.md a summary of the other notes"`,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := rangeArgs([]string{"TASK..."})(cmd, args); err != nil {
				return fmt.Errorf("%w, quoted or as words", err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd.Context(), a, o, strings.Join(args, " "), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.stores, "store", nil, "attach the store `STORE[:ACCESS][:PROMPT]`, ACCESS read_only or read_write\n(the default); 1 to 8 stores, one flag each")
	f.StringVar(&o.model, "model", defaultAgentModel, "the Claude `MODEL` to use")
	f.IntVar(&o.maxTurns, "max-turns", 30, "stop with an error after `N` requests to the model")
	f.Int64Var(&o.maxTokens, "max-tokens", 16000, "let Claude write at most `N` tokens in one reply")
	f.StringVar(&o.sessionID, "session", "", "record the writes as the session `ID` (sesn_…; default: a new one)")
	f.BoolVar(&o.search, "search", false, "also give Claude memory_search, over the search index in the data directory")
	f.BoolVar(&o.watch, "watch", false, "after the run, run again whenever others change the stores, until Ctrl-C")
	f.DurationVar(&o.quiet, "watch-quiet", 2*time.Second, "with --watch, wait until the stores were quiet this `long` before a run")
	// Flags may follow the task: "gitmem agent --store notes do this --max-turns 5".
	f.SetInterspersed(true)
	return cmd
}

// storeSpec is a parsed --store value.
type storeSpec struct {
	ref    string
	access tooladapter.Access
	prompt string
}

// accessTypos are spellings of an access that are more likely a mistake than a prompt.
var accessTypos = map[string]bool{"ro": true, "rw": true, "readonly": true, "read-only": true,
	"readwrite": true, "read-write": true, "read": true, "write": true, "r": true, "w": true}

// parseStoreSpec parses STORE[:ACCESS][:PROMPT]. The store ends at the first ':'; an access
// is the next field if it is read_only or read_write; everything after is the prompt, ':'
// and all.
func parseStoreSpec(s string) (storeSpec, error) {
	ref, rest, hasRest := strings.Cut(s, ":")
	if strings.TrimSpace(ref) == "" {
		return storeSpec{}, fmt.Errorf("--store %q: the store is missing; use --store STORE[:read_only|:read_write|:propose][:PROMPT]", s)
	}
	spec := storeSpec{ref: ref, access: tooladapter.ReadWrite}
	if !hasRest {
		return spec, nil
	}
	head, tail, hasTail := strings.Cut(rest, ":")
	switch a := tooladapter.Access(head); {
	case a == tooladapter.ReadOnly || a == tooladapter.ReadWrite || a == tooladapter.Propose:
		spec.access = a
		if hasTail {
			spec.prompt = tail
		}
	case accessTypos[strings.ToLower(strings.TrimSpace(head))] || strings.EqualFold(head, string(tooladapter.ReadOnly)) || strings.EqualFold(head, string(tooladapter.ReadWrite)):
		return storeSpec{}, fmt.Errorf("--store %q: access %q is unknown; use read_only, read_write or propose (to make %q the prompt, write %s:read_write:%s)", s, head, head, ref, rest)
	default:
		spec.prompt = rest
	}
	spec.prompt = strings.TrimSpace(spec.prompt)
	if n := utf8.RuneCountInString(spec.prompt); n > tooladapter.MaxPromptChars {
		return storeSpec{}, fmt.Errorf("--store %s: the prompt is %d characters; the limit is %d", ref, n, tooladapter.MaxPromptChars)
	}
	return spec, nil
}

// checkAPICredentials fails with how to set a key unless the SDK will find credentials.
func checkAPICredentials() error {
	for _, v := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"} {
		if os.Getenv(v) != "" {
			return nil
		}
	}
	return errors.New(`the agent calls the Claude API and needs an API key, but ANTHROPIC_API_KEY is not set.
Set it in the shell that runs gitmem:

    export ANTHROPIC_API_KEY=sk-ant-...      (a key from https://console.anthropic.com/settings/keys)

The SDK also reads ANTHROPIC_BASE_URL, to send the requests to another endpoint (a proxy or
gateway), and ANTHROPIC_AUTH_TOKEN, a bearer token used instead of a key.`)
}

func runAgent(ctx context.Context, a *app, o agentOptions, task string, stdout, stderr io.Writer) (err error) {
	if len(o.stores) == 0 {
		return usageError{fmt.Errorf("attach a store with --store STORE (1 to %d)", tooladapter.MaxStores)}
	}
	if len(o.stores) > tooladapter.MaxStores {
		return usageError{fmt.Errorf("%d stores given; an agent can have at most %d", len(o.stores), tooladapter.MaxStores)}
	}
	specs := make([]storeSpec, len(o.stores))
	for i, s := range o.stores {
		if specs[i], err = parseStoreSpec(s); err != nil {
			return usageError{err}
		}
	}
	if strings.TrimSpace(task) == "" {
		return usageError{errors.New("the task is empty")}
	}
	if o.maxTurns < 1 {
		return usageError{fmt.Errorf("--max-turns must be at least 1, got %d", o.maxTurns)}
	}
	if o.maxTokens < 1 {
		return usageError{fmt.Errorf("--max-tokens must be at least 1, got %d", o.maxTokens)}
	}
	if o.watch && o.quiet < 0 {
		return usageError{fmt.Errorf("--watch-quiet must not be negative, got %s", o.quiet)}
	}
	if err := checkAPICredentials(); err != nil {
		return err
	}

	return a.withTarget(ctx, func(t target) error {
		if t.srv != nil {
			return agentThroughServer(ctx, t, o, specs, task, stdout, stderr)
		}
		if o.watch {
			return invalidf("--watch needs a running gitmem serve (in this folder, or --server URL): while this command holds the data directory, nobody else can change the stores")
		}
		d := t.data
		opts := tooladapter.Options{ID: o.sessionID}
		for _, spec := range specs {
			s, err := findStore(ctx, d, spec.ref)
			if err != nil {
				return err
			}
			opts.Stores = append(opts.Stores, tooladapter.Attachment{Store: s, Access: spec.access, Prompt: spec.prompt})
		}
		if opts.ID == "" {
			opts.ID = gitstore.NewID(tooladapter.SessionPrefix, time.Now())
		}
		props, err := proposeTo(d, opts.Stores, opts.ID)
		if err != nil {
			return err
		}
		defer props.Close()
		if o.search {
			// The indexers log only trouble. An index is built on first use: memory_search
			// waits a little for it, and else tells the model that it is being built.
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			svc := search.New(d, search.Options{Logger: log})
			defer svc.Close() // before withData closes the data directory
			opts.Search = svc
		}
		sess, err := tooladapter.NewSession(ctx, opts)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "session %s (every write is a version by this session_actor)\n", sess.ID())
		if err := printSessionMounts(ctx, stderr, sess, opts.Stores, specs); err != nil {
			return err
		}
		logHint := fmt.Sprintf("the run's versions are BY %s in: gitmem log %s", sess.ID(), quoteArg(specs[0].ref))
		return agentLoop(ctx, localTools{sess}, o, task, logHint, stdout, stderr)
	})
}

// agentThroughServer runs the agent with the tools of the server's /mcp, as one session:
// what "gitmem agent" does while a server holds the data directory, or with --server.
func agentThroughServer(ctx context.Context, t target, o agentOptions, specs []storeSpec, task string, stdout, stderr io.Writer) error {
	tools, sessionID, infos, err := connectTools(ctx, t, specs, o.sessionID)
	if err != nil {
		return err
	}
	defer tools.Close()
	fmt.Fprintf(stderr, "session %s (every write is a version by this session_actor), through %s\n", sessionID, t.srv.URL())
	printMounts(stderr, tooladapter.MountPaths(infos), infos, specs)
	logHint := fmt.Sprintf("the run's versions are BY %s in: gitmem log %s", sessionID, quoteArg(specs[0].ref))
	if !o.watch {
		return agentLoop(ctx, mcpTools{tools}, o, task, logHint, stdout, stderr)
	}
	return watchAgent(ctx, t, infos, sessionID, func(task string) error {
		return agentLoop(ctx, mcpTools{tools}, o, task, logHint, stdout, stderr)
	}, task, o.quiet, stderr)
}

// agentTools answer the model's tool calls: a session on the data directory (localTools), or
// a server's tools over MCP (mcpTools).
type agentTools interface {
	SystemPrompt() string
	Run(ctx context.Context, b anthropic.BetaToolUseBlock) anthropic.BetaToolResultBlockParam
}

type localTools struct{ sess *tooladapter.Session }

func (l localTools) SystemPrompt() string { return l.sess.SystemPrompt() }

func (l localTools) Run(ctx context.Context, b anthropic.BetaToolUseBlock) anthropic.BetaToolResultBlockParam {
	return runTool(ctx, l.sess, b)
}

type mcpTools struct{ tools *client.Tools }

// SystemPrompt is the server's instructions: the same session prompt that it builds.
func (m mcpTools) SystemPrompt() string { return m.tools.InitializeResult().Instructions }

func (m mcpTools) Run(ctx context.Context, b anthropic.BetaToolUseBlock) anthropic.BetaToolResultBlockParam {
	res, err := m.tools.Call(ctx, b.Name, toolInput(b))
	if err != nil {
		return anthropic.NewBetaToolResultTextBlockParam(b.ID, "Error: the gitmem server did not answer: "+err.Error(), true)
	}
	return anthropic.NewBetaToolResultTextBlockParam(b.ID, res.Content, res.IsError)
}

// agentLoop runs the conversation: a request, the tool calls of its reply, their results in
// the next request, until the model ends its turn.
func agentLoop(ctx context.Context, tools agentTools, o agentOptions, task, logHint string, stdout, stderr io.Writer) error {
	defs := []anthropic.BetaToolUnionParam{{OfMemoryTool20250818: &anthropic.BetaMemoryTool20250818Param{}}}
	if o.search {
		for _, t := range tooladapter.BetaToolParams() {
			if t.OfTool != nil && t.OfTool.Name == tooladapter.SearchTool {
				defs = append(defs, t)
			}
		}
	}
	params := anthropic.BetaMessageNewParams{
		Model:     anthropic.Model(o.model),
		MaxTokens: o.maxTokens,
		System:    []anthropic.BetaTextBlockParam{{Text: tools.SystemPrompt()}},
		Tools:     defs,
		ContextManagement: anthropic.BetaContextManagementConfigParam{
			Edits: []anthropic.BetaContextManagementConfigEditUnionParam{{
				// The memory tool's results are where the work survives a clearing, so they are
				// never cleared; old search results may be, since a search can be run again.
				OfClearToolUses20250919: &anthropic.BetaClearToolUses20250919EditParam{ExcludeTools: []string{tooladapter.MemoryToolName}},
			}},
		},
		Betas: []anthropic.AnthropicBeta{anthropic.AnthropicBetaContextManagement2025_06_27},
	}
	messages := []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(task))}
	api := anthropic.NewClient()

	for turn := 1; ; turn++ {
		if turn > o.maxTurns {
			return fmt.Errorf("stopped after %d turns (--max-turns %d) while Claude was still working; %s", o.maxTurns, o.maxTurns, logHint)
		}
		params.Messages = messages
		resp, err := api.Beta.Messages.New(ctx, params)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted in turn %d; %s", turn, logHint)
			}
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		messages = append(messages, resp.ToParam())

		var results []anthropic.BetaContentBlockParamUnion
		for _, block := range resp.Content {
			switch b := block.AsAny().(type) {
			case anthropic.BetaTextBlock:
				text := strings.TrimRight(b.Text, "\n")
				if text != "" {
					fmt.Fprintln(stdout, text)
				}
			case anthropic.BetaToolUseBlock:
				if resp.StopReason != anthropic.BetaStopReasonToolUse {
					continue // a reply cut off at max_tokens: its last call may be incomplete
				}
				if ctx.Err() != nil {
					return fmt.Errorf("interrupted in turn %d, before the tool call %s; %s", turn, toolLine(b.Name, toolInput(b)), logHint)
				}
				res := tools.Run(ctx, b)
				fmt.Fprintln(stderr, describeResult(toolLine(b.Name, toolInput(b)), res))
				results = append(results, anthropic.BetaContentBlockParamUnion{OfToolResult: &res})
			}
		}

		switch resp.StopReason {
		case anthropic.BetaStopReasonToolUse:
			if len(results) == 0 {
				return fmt.Errorf("turn %d: the reply stopped for tool use but has no tool call", turn)
			}
			messages = append(messages, anthropic.NewBetaUserMessage(results...))
		case anthropic.BetaStopReasonPauseTurn:
			// The API paused a long turn; sending the conversation back lets it go on.
		case anthropic.BetaStopReasonEndTurn, anthropic.BetaStopReasonStopSequence:
			fmt.Fprintf(stderr, "done in %d turns; %s\n", turn, logHint)
			return nil
		case anthropic.BetaStopReasonMaxTokens:
			return fmt.Errorf("turn %d: the reply was cut off at %d tokens (raise --max-tokens); %s", turn, o.maxTokens, logHint)
		case anthropic.BetaStopReasonRefusal:
			return fmt.Errorf("turn %d: Claude declined the task; %s", turn, logHint)
		default:
			return fmt.Errorf("turn %d: the reply stopped with stop_reason %q; %s", turn, resp.StopReason, logHint)
		}
	}
}

// toolInput returns the raw JSON input of a tool call.
func toolInput(b anthropic.BetaToolUseBlock) []byte {
	if raw := b.JSON.Input.Raw(); raw != "" {
		return []byte(raw)
	}
	raw, _ := json.Marshal(b.Input)
	return raw
}

// runTool runs one tool call of the model and returns its result.
func runTool(ctx context.Context, sess *tooladapter.Session, b anthropic.BetaToolUseBlock) anthropic.BetaToolResultBlockParam {
	raw := toolInput(b)
	if b.Name == tooladapter.MemoryToolName {
		var cmd anthropic.BetaMemoryTool20250818CommandUnion
		if err := json.Unmarshal(raw, &cmd); err == nil {
			return sess.HandleMemoryCommand(ctx, b.ID, cmd)
		}
		// Not an object: the session explains what the input should be.
	}
	return sess.ToolResult(ctx, b.ID, b.Name, raw)
}

// toolLine describes a tool call in one line: "memory create /memories/plan.md".
func toolLine(name string, raw []byte) string {
	var in map[string]any
	_ = json.Unmarshal(raw, &in)
	str := func(k string) string {
		s, _ := in[k].(string)
		return s
	}
	parts := []string{name}
	if c := str("command"); c != "" {
		parts = append(parts, c)
	}
	switch {
	case str("old_path") != "" || str("new_path") != "":
		parts = append(parts, str("old_path"), "->", str("new_path"))
	case str("path") != "":
		parts = append(parts, str("path"))
	}
	if q := str("query"); q != "" {
		parts = append(parts, fmt.Sprintf("%q", q))
	}
	if p := str("path_prefix"); p != "" {
		parts = append(parts, "in "+p)
	}
	return shorten(strings.Join(parts, " "), 160)
}

// describeResult is the stderr line of a tool call: the call, and an error's message.
func describeResult(line string, res anthropic.BetaToolResultBlockParam) string {
	if !res.IsError.Valid() || !res.IsError.Value {
		return "> " + line
	}
	var msg string
	for _, c := range res.Content {
		if c.OfText != nil {
			msg += c.OfText.Text
		}
	}
	msg = strings.TrimPrefix(strings.Join(strings.Fields(msg), " "), "Error: ")
	return "> " + line + "  (is_error: " + shorten(msg, 200) + ")"
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// quoteArg quotes a command-line argument for a shell when it needs it.
func quoteArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
