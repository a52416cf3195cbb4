// Package buildinfo says which build of gitmem is running: its module version and the VCS
// revision it was built from, as the Go toolchain records them in the binary.
package buildinfo

import "runtime/debug"

// Info is what a build says of itself.
type Info struct {
	Version  string `json:"version"`            // the module version, "(devel)" for a build from a checkout
	Revision string `json:"revision,omitempty"` // the VCS commit, if the build recorded it
	Modified bool   `json:"modified,omitempty"` // the checkout had changes not in Revision
	Go       string `json:"go"`                 // the Go toolchain
}

// Read returns the running binary's build information.
func Read() Info {
	info := Info{Version: "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.Go = bi.GoVersion
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the version in one line: "v1.2.3 (abcdef123456, modified)".
func (i Info) String() string {
	s := i.Version
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if i.Modified {
			rev += ", modified"
		}
		s += " (" + rev + ")"
	}
	return s
}
