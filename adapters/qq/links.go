package qq

import (
	"regexp"
	"strings"
	"unicode"
)

// QQ refuses any message that holds a link, or anything that looks like a
// domain: "example.com", "1.sh", even a file name like "crawler.py"
// (groups and C2C: 40054010; guild channels and DMs: 304003). Rather than
// lose the message, the adapter sends it again with its links defanged, the
// usual way of making a link readable but not clickable:
//
//	example.com            → example[.]com
//	https://x.io/a         → hxxps://x[.]io/a
//	http://10.0.0.1/x      → hxxp://10.0.0.1/x
//
// If QQ refuses that too, every dot between two non-space characters
// becomes "[.]" ("v1.2" → "v1[.]2"). The model is told (linkNotice).
const (
	codeURLRefused = 40054010
	codeGuildURL   = 304003
)

// linkNotice is what the model hears when links in its reply were altered.
const linkNotice = "Delivered, but QQ refuses messages with links, so the links were altered to be non-clickable " +
	"(example.com became example[.]com, https:// became hxxps://); the user sees them that way."

var (
	// domainish: dot-separated labels whose last one starts with a letter,
	// optionally after an http(s) or ftp scheme.
	domainish = regexp.MustCompile(`(?i)\b(?:(?:https?|ftp)://)?[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.[a-z][a-z0-9-]*|\b(?:https?|ftp)://`)
)

// defang makes the links in text non-clickable; level 1 touches links and
// domain-like words only, level 2 every dot inside a word as well. It
// returns text unchanged when there is nothing to alter.
func defang(text string, level int) string {
	out := domainish.ReplaceAllStringFunc(text, func(m string) string {
		scheme, rest, ok := strings.Cut(m, "://")
		if !ok {
			scheme, rest = "", m
		} else {
			scheme = strings.NewReplacer("ttp", "xxp", "TTP", "XXP", "tp", "xp", "TP", "XP").Replace(scheme) + "://"
		}
		return scheme + strings.ReplaceAll(rest, ".", "[.]")
	})
	if level >= 2 {
		out = bracketInnerDots(out)
	}
	return out
}

// bracketInnerDots turns every dot between two non-space characters into
// "[.]", leaving those already bracketed alone.
func bracketInnerDots(text string) string {
	rs := []rune(text)
	var b strings.Builder
	b.Grow(len(text))
	for i, r := range rs {
		if r == '.' && i > 0 && i+1 < len(rs) && !unicode.IsSpace(rs[i-1]) && !unicode.IsSpace(rs[i+1]) &&
			(rs[i-1] != '[' || rs[i+1] != ']') {
			b.WriteString("[.]")
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
