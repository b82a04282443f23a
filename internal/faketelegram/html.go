package faketelegram

import (
	"fmt"
	"strconv"
	"strings"
)

// htmlTags are the tags the Bot API accepts in HTML mode.
var htmlTags = map[string]bool{"a": true, "b": true, "strong": true, "i": true, "em": true, "s": true,
	"strike": true, "del": true, "u": true, "ins": true, "tg-spoiler": true, "tg-emoji": true,
	"span": true, "pre": true, "code": true, "blockquote": true}

// parseHTML checks HTML mode: supported tags only, properly nested and
// closed ("</>" closes the innermost); '<' always starts a tag. Like the real
// server it decodes &lt; &gt; &amp; &quot; and numeric entities and keeps
// any other '&' literally.
func parseHTML(s string) (string, error) {
	type tag struct{ name string }
	var stack []tag
	var out strings.Builder
	n := len(s)
	for i := 0; i < n; {
		c := s[i]
		if c == '&' {
			r, l, err := htmlEntity(s[i:])
			if err != nil {
				return "", err
			}
			if l == 0 {
				out.WriteByte('&')
				i++
			} else {
				out.WriteRune(r)
				i += l
			}
			continue
		}
		if c != '<' {
			out.WriteByte(c)
			i++
			continue
		}
		begin := i
		i++
		if i >= n || s[i] != '/' { // start tag
			j := i
			for j < n && !isSpace(s[j]) && s[j] != '>' {
				j++
			}
			if j >= n {
				return "", fmt.Errorf("Unclosed start tag at byte offset %d", begin)
			}
			name := strings.ToLower(s[i:j])
			if !htmlTags[name] {
				return "", fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, begin)
			}
			attrs, next, err := htmlAttrs(s, j, name, begin)
			if err != nil {
				return "", err
			}
			if name == "span" && attrs["class"] != "tg-spoiler" {
				return "", fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", begin)
			}
			stack = append(stack, tag{name})
			i = next
			continue
		}
		if len(stack) == 0 {
			return "", fmt.Errorf("Unexpected end tag at byte offset %d", begin)
		}
		i++ // '/'
		j := i
		for j < n && !isSpace(s[j]) && s[j] != '>' {
			j++
		}
		name := strings.ToLower(s[i:j])
		for j < n && isSpace(s[j]) {
			j++
		}
		if j >= n || s[j] != '>' {
			return "", fmt.Errorf("Unclosed end tag at byte offset %d", begin)
		}
		if open := stack[len(stack)-1].name; name != "" && name != open {
			return "", fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", begin, open, name)
		}
		stack = stack[:len(stack)-1]
		i = j + 1
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1].name)
	}
	return out.String(), nil
}

// htmlAttrs reads the attributes of a start tag from i (just after its name)
// and returns them with the offset after '>'.
func htmlAttrs(s string, i int, name string, begin int) (map[string]string, int, error) {
	n := len(s)
	attrs := map[string]string{}
	unclosed := fmt.Errorf("Unclosed start tag \"%s\" at byte offset %d", name, begin)
	for {
		for i < n && isSpace(s[i]) {
			i++
		}
		if i >= n {
			return nil, 0, unclosed
		}
		if s[i] == '>' {
			return attrs, i + 1, nil
		}
		a := i
		for i < n && !isSpace(s[i]) && s[i] != '=' && s[i] != '>' {
			i++
		}
		key := strings.ToLower(s[a:i])
		if key == "" {
			return nil, 0, fmt.Errorf("Empty attribute name in the tag \"%s\" at byte offset %d", name, begin)
		}
		for i < n && isSpace(s[i]) {
			i++
		}
		if i >= n {
			return nil, 0, unclosed
		}
		if s[i] != '=' {
			attrs[key] = ""
			continue
		}
		i++
		for i < n && isSpace(s[i]) {
			i++
		}
		if i >= n {
			return nil, 0, unclosed
		}
		if q := s[i]; q == '"' || q == '\'' {
			k := strings.IndexByte(s[i+1:], q)
			if k < 0 {
				return nil, 0, fmt.Errorf("Unclosed start tag at byte offset %d", begin)
			}
			attrs[key] = s[i+1 : i+1+k]
			i += k + 2
			continue
		}
		v := i
		for i < n && !isSpace(s[i]) && s[i] != '>' {
			i++
		}
		if i >= n {
			return nil, 0, fmt.Errorf("Unexpected end of name token at byte offset %d", v)
		}
		attrs[key] = s[v:i]
	}
}

// htmlEntity decodes the entity at the start of s ("&lt;", "&#60;",
// "&#x3c;", the ';' optional); l is 0 when s does not start with one.
func htmlEntity(s string) (r rune, l int, err error) {
	i := 1
	if strings.HasPrefix(s, "&#") {
		i, base := 2, 10
		if i < len(s) && (s[i] == 'x' || s[i] == 'X') {
			i, base = 3, 16
		}
		digits := "0123456789"
		if base == 16 {
			digits = "0123456789abcdefABCDEF"
		}
		j := i
		for j < len(s) && strings.IndexByte(digits, s[j]) >= 0 {
			j++
		}
		v, perr := strconv.ParseUint(s[i:j], base, 32)
		if j == i || perr != nil || v == 0 || v > 0x10ffff {
			return 0, 0, nil
		}
		if v >= 0xd800 && v <= 0xdfff {
			return 0, 0, fmt.Errorf("Text contains invalid Unicode characters after decoding HTML entities, check for unmatched surrogate code units")
		}
		if j < len(s) && s[j] == ';' {
			j++
		}
		return rune(v), j, nil
	}
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
		i++
	}
	r, ok := map[string]rune{"lt": '<', "gt": '>', "amp": '&', "quot": '"'}[s[1:i]]
	if !ok {
		return 0, 0, nil
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	return r, i, nil
}
