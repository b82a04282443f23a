package chat

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxStemBytes keeps "<stem>.<seq>.jsonl" well under the 255-byte file-name
// limit of common filesystems.
const maxStemBytes = 200

const (
	liveSuffix = ".jsonl"
	hexDigits  = "0123456789ABCDEF"
)

// EscapeChatKey returns the file-name stem for chatKey. Letters, digits and
// '-' are kept, ':' becomes '_', and every other byte becomes %XX (uppercase
// hex). The stem therefore never contains '/', '\\', '.', NUL or anything else
// a filesystem could interpret, so a chat file always lands directly in the
// chats folder. The mapping is reversible with UnescapeChatKey.
//
// It fails with ErrInvalidChatKey for an empty key, a key that is not valid
// UTF-8, or a key whose stem would be longer than 200 bytes.
func EscapeChatKey(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalidChatKey)
	}
	if !utf8.ValidString(key) {
		return "", fmt.Errorf("%w: not valid UTF-8", ErrInvalidChatKey)
	}
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case keptByte(c):
			b.WriteByte(c)
		case c == ':':
			b.WriteByte('_')
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0x0F])
		}
		// Checked inside the loop so a huge key is refused without building
		// its whole escaped form first.
		if b.Len() > maxStemBytes {
			return "", fmt.Errorf("%w: longer than %d bytes once escaped", ErrInvalidChatKey, maxStemBytes)
		}
	}
	return b.String(), nil
}

// UnescapeChatKey returns the chatKey whose stem is stem. It accepts only
// stems that EscapeChatKey could have produced (uppercase hex, no escaped
// letters, digits, '-' or ':'), so every chat has exactly one file name.
func UnescapeChatKey(stem string) (string, error) {
	if stem == "" {
		return "", fmt.Errorf("%w: empty stem", ErrInvalidChatKey)
	}
	if len(stem) > maxStemBytes {
		return "", fmt.Errorf("%w: stem longer than %d bytes", ErrInvalidChatKey, maxStemBytes)
	}
	key := make([]byte, 0, len(stem))
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		switch {
		case keptByte(c):
			key = append(key, c)
		case c == '_':
			key = append(key, ':')
		case c == '%':
			if i+2 >= len(stem) {
				return "", fmt.Errorf("%w: truncated escape in stem %q", ErrInvalidChatKey, stem)
			}
			hi, okHi := unhex(stem[i+1])
			lo, okLo := unhex(stem[i+2])
			if !okHi || !okLo {
				return "", fmt.Errorf("%w: bad escape in stem %q", ErrInvalidChatKey, stem)
			}
			v := hi<<4 | lo
			if keptByte(v) || v == ':' {
				return "", fmt.Errorf("%w: needless escape in stem %q", ErrInvalidChatKey, stem)
			}
			key = append(key, v)
			i += 2
		default:
			return "", fmt.Errorf("%w: byte %q not allowed in stem", ErrInvalidChatKey, c)
		}
	}
	if !utf8.Valid(key) {
		return "", fmt.Errorf("%w: stem %q decodes to invalid UTF-8", ErrInvalidChatKey, stem)
	}
	return string(key), nil
}

// keptByte reports whether c appears unchanged in a stem.
func keptByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-'
}

// unhex decodes one uppercase hex digit; lowercase is refused so that each
// key has a single spelling.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// liveFileName is the file a chat's new entries are appended to.
func liveFileName(stem string) string {
	return stem + liveSuffix
}

// archiveFileName is the name of archived segment seq (1, 2, ...) of a chat.
func archiveFileName(stem string, seq int) string {
	return fmt.Sprintf("%s.%06d%s", stem, seq, liveSuffix)
}

// parseFileName splits a file name from the chats folder into its stem and
// archive seq (0 for the live file). Names the store would not have written,
// including ones whose stem does not unescape, are refused.
func parseFileName(name string) (stem string, seq int, ok bool) {
	base, found := strings.CutSuffix(name, liveSuffix)
	if !found {
		return "", 0, false
	}
	stem, digits, isArchive := strings.Cut(base, ".")
	if _, err := UnescapeChatKey(stem); err != nil {
		return "", 0, false
	}
	if !isArchive {
		return stem, 0, true
	}
	if len(digits) < 6 || strings.Trim(digits, "0123456789") != "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || archiveFileName(stem, n) != name {
		return "", 0, false
	}
	return stem, n, true
}
