package main

import (
	"regexp"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

var (
	mdHeading = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	mdBold    = lipgloss.NewStyle().Bold(true)
	mdCode    = lipgloss.NewStyle().Foreground(lipgloss.Color("214"))
	mdBlock   = lipgloss.NewStyle().Foreground(lipgloss.Color("250")).PaddingLeft(2)
	mdFence   = lipgloss.NewStyle().Faint(true)
)

var (
	boldRE   = regexp.MustCompile(`\*\*([^*\n]+)\*\*`)
	inlineRE = regexp.MustCompile("`([^`\n]+)`")
)

// renderMarkdown styles the Markdown that chat replies use: headings,
// **bold**, `inline code` and fenced code blocks (kept verbatim, only
// coloured). Everything else stays as written, which reads fine in a
// terminal. Lines are wrapped at width, code excepted.
func renderMarkdown(text string, width int) string {
	var out []string
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			inFence = !inFence
			out = append(out, mdFence.Render(line))
		case inFence:
			out = append(out, mdBlock.Render(line))
		case strings.HasPrefix(trimmed, "#"):
			out = append(out, mdHeading.Render(strings.TrimSpace(strings.TrimLeft(trimmed, "#"))))
		default:
			line = boldRE.ReplaceAllStringFunc(line, func(s string) string { return mdBold.Render(s[2 : len(s)-2]) })
			line = inlineRE.ReplaceAllStringFunc(line, func(s string) string { return mdCode.Render(s[1 : len(s)-1]) })
			if width > 10 {
				line = lipgloss.NewStyle().Width(width).Render(line)
				line = strings.TrimRight(line, " ")
			}
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
