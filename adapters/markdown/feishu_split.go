package markdown

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// packFeishu puts rendered blocks into cards: as many whole blocks as fit
// FeishuMaxContent and feishuMaxTables, a block too big for any card cut
// between lines (a code block keeps its fence in every piece).
func packFeishu(blocks []fblock) []string {
	var parts []string
	var cur []string
	curLen, tables := 0, 0
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, strings.Join(cur, "\n\n"))
		}
		cur, curLen, tables = nil, 0, 0
	}
	for _, bl := range blocks {
		pieces := []string{bl.md}
		if jsonLen(bl.md) > FeishuMaxContent {
			pieces = cutBlock(bl)
		}
		for _, p := range pieces {
			n := jsonLen(p) + jsonLen("\n\n")
			if len(cur) > 0 && (curLen+n > FeishuMaxContent || (bl.table && tables >= feishuMaxTables)) {
				flush()
			}
			cur = append(cur, p)
			curLen += n
			if bl.table {
				tables++
			}
		}
	}
	flush()
	return parts
}

// cutBlock cuts one block over FeishuMaxContent into pieces that fit.
func cutBlock(bl fblock) []string {
	body, open, closing := bl.md, "", ""
	if bl.code {
		first, rest, _ := strings.Cut(bl.md, "\n")
		i := strings.LastIndex(rest, "\n")
		open, closing, body = first+"\n", "\n"+rest[i+1:], rest[:max(i, 0)]
	}
	budget := FeishuMaxContent - jsonLen(open+closing) - 16
	var out []string
	var cur strings.Builder
	curLen := 0
	emit := func() {
		if cur.Len() > 0 {
			out = append(out, open+strings.TrimSuffix(cur.String(), "\n")+closing)
		}
		cur.Reset()
		curLen = 0
	}
	for _, line := range strings.SplitAfter(body, "\n") {
		for jsonLen(line) > budget {
			// One line longer than a card: cut it between characters,
			// never inside an entity.
			emit()
			head := cutAt(line, budget)
			out = append(out, open+head+closing)
			line = line[len(head):]
		}
		if n := jsonLen(line); curLen+n > budget {
			emit()
		}
		cur.WriteString(line)
		curLen += jsonLen(line)
	}
	emit()
	return out
}

// cutAt returns the longest prefix of s within budget JSON bytes that ends
// on a character and not inside an "&…;" entity.
func cutAt(s string, budget int) string {
	n, end := 0, 0
	for i, c := range s {
		w := jsonLen(string(c))
		if n+w > budget {
			break
		}
		n += w
		end = i + utf8.RuneLen(c)
	}
	if amp := strings.LastIndexByte(s[:end], '&'); amp >= 0 && amp > end-8 && !strings.Contains(s[amp:end], ";") {
		end = amp
	}
	if end == 0 {
		_, end = utf8.DecodeRuneInString(s)
	}
	return s[:end]
}

// jsonLen is how many bytes s takes as a JSON string body (without
// quotes), as encoding/json writes it with HTML escaping off.
func jsonLen(s string) int {
	n := 0
	for _, c := range s {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20, c == '\u2028', c == '\u2029':
			n += 6
		case c == utf8.RuneError:
			n += 6
		default:
			n += utf8.RuneLen(c)
		}
	}
	return n
}

// jsonString is s encoded as a JSON string without HTML escaping; tests
// check jsonLen against it.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
