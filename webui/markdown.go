package webui

import (
	"bytes"
	"html/template"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Memory content is written by agents, and an agent can be made to write anything: it is
// rendered as Markdown by goldmark, which leaves raw HTML out and refuses javascript: and
// similar link targets, and then sanitized by bluemonday's policy for user content, which
// keeps only harmless elements and attributes. The page's Content-Security-Policy, which
// allows no script and no image from elsewhere, is the third wall.
var (
	md        = goldmark.New(goldmark.WithExtensions(extension.GFM))
	sanitizer = bluemonday.UGCPolicy().RequireNoReferrerOnLinks(true).AddTargetBlankToFullyQualifiedLinks(false)
)

// markdown renders memory content as safe HTML.
func markdown(content string) template.HTML {
	var buf bytes.Buffer
	if err := md.Convert([]byte(content), &buf); err != nil {
		// goldmark fails only on a failing writer; show the text as it is.
		return template.HTML(template.HTMLEscapeString(content))
	}
	return template.HTML(sanitizer.SanitizeBytes(buf.Bytes()))
}
