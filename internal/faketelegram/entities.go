package faketelegram

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// wireEntity is a MessageEntity as a client sends it in "entities" or
// "caption_entities" (https://core.telegram.org/bots/api#messageentity).
type wireEntity struct {
	Type          string          `json:"type"`
	Offset        int             `json:"offset"`
	Length        int             `json:"length"`
	URL           string          `json:"url"`
	User          json.RawMessage `json:"user"`
	Language      string          `json:"language"`
	CustomEmojiID string          `json:"custom_emoji_id"`
}

// entityKind sorts entity types by the nesting rules of
// https://core.telegram.org/bots/api#formatting-options.
type entityKind int

const (
	kindStyle entityKind = iota // bold, italic, underline, strikethrough, spoiler: nest with any but code/pre
	kindCode                    // code, pre: contain no entity, are part of no style
	kindQuote                   // blockquote, expandable_blockquote: "can't be nested"
	kindOther                   // everything else: "can't contain each other"
)

// entityKindOf is the nesting kind of t; false for a type the Bot API does
// not document for MessageEntity.
func entityKindOf(t string) (entityKind, bool) {
	switch t {
	case "bold", "italic", "underline", "strikethrough", "spoiler":
		return kindStyle, true
	case "code", "pre":
		return kindCode, true
	case "blockquote", "expandable_blockquote":
		return kindQuote, true
	case "mention", "hashtag", "cashtag", "bot_command", "url", "email", "phone_number",
		"text_link", "text_mention", "custom_emoji":
		return kindOther, true
	}
	return 0, false
}

// checkEntities checks raw (the JSON "entities" parameter) against text by
// the documented rules. The real server is more forgiving (it drops or
// clips some bad entities); the fake rejects them, with the real error's
// shape, so that a client bug shows up in tests. given is false when raw
// lists no entity (absent, "null" as some clients send, or "[]"): then
// parse_mode applies.
func checkEntities(text, raw string) (given bool, e *apiError) {
	if strings.TrimSpace(raw) == "" {
		return false, nil
	}
	var ents []wireEntity
	if err := json.Unmarshal([]byte(raw), &ents); err != nil {
		return false, badRequest("can't parse entities JSON object")
	}
	if len(ents) == 0 {
		return false, nil
	}
	units := utf16.Encode([]rune(text))
	for i, e := range ents {
		if err := checkEntity(units, e); err != nil {
			return true, badRequest("can't parse entities: entity %d: %v", i, err)
		}
		for j := range i {
			if err := checkNesting(ents[j], e); err != nil {
				return true, badRequest("can't parse entities: entities %d and %d: %v", j, i, err)
			}
		}
	}
	return true, nil
}

// checkEntity checks one entity on its own.
func checkEntity(units []uint16, e wireEntity) error {
	if _, ok := entityKindOf(e.Type); !ok {
		return fmt.Errorf("unsupported entity type %q", e.Type)
	}
	// "Offset in UTF-16 code units to the start of the entity", "Length of
	// the entity in UTF-16 code units": inside the text, not empty, and
	// (as UTF-16 has it) not between the halves of a surrogate pair.
	end := e.Offset + e.Length
	switch {
	case e.Length <= 0:
		return fmt.Errorf("length %d", e.Length)
	case e.Offset < 0 || end > len(units):
		return fmt.Errorf("[%d,%d) is outside the text of %d UTF-16 code units", e.Offset, end, len(units))
	case splitsPair(units, e.Offset) || splitsPair(units, end):
		return fmt.Errorf("[%d,%d) splits a surrogate pair", e.Offset, end)
	}
	switch e.Type {
	case "text_link": // "url: For “text_link” only, URL that will be opened after user taps on the text"
		u, err := url.Parse(e.URL)
		if err != nil || e.URL == "" {
			return fmt.Errorf("wrong HTTP URL %q", e.URL)
		}
		switch strings.ToLower(u.Scheme) {
		case "http", "https":
			if u.Host == "" {
				return fmt.Errorf("wrong HTTP URL %q", e.URL)
			}
		case "tg":
		default:
			return fmt.Errorf("unsupported URL protocol in %q", e.URL)
		}
	case "pre": // "language: For “pre” only, the programming language of the entity text"
		if strings.ContainsAny(e.Language, " \t\n\r") {
			return fmt.Errorf("wrong pre language %q", e.Language)
		}
	case "text_mention": // "user: For “text_mention” only, the mentioned user"
		if len(e.User) == 0 || string(e.User) == "null" {
			return fmt.Errorf("text_mention without user")
		}
	case "custom_emoji": // "custom_emoji_id: For “custom_emoji” only"
		if e.CustomEmojiID == "" {
			return fmt.Errorf("custom_emoji without custom_emoji_id")
		}
	}
	return nil
}

// splitsPair reports whether offset i falls inside a surrogate pair.
func splitsPair(units []uint16, i int) bool {
	return i > 0 && i < len(units) && units[i] >= 0xDC00 && units[i] <= 0xDFFF &&
		units[i-1] >= 0xD800 && units[i-1] <= 0xDBFF
}

// checkNesting applies "Message entities can be nested, providing following
// restrictions are met" (https://core.telegram.org/bots/api#formatting-options).
func checkNesting(a, b wireEntity) error {
	aEnd, bEnd := a.Offset+a.Length, b.Offset+b.Length
	if aEnd <= b.Offset || bEnd <= a.Offset {
		return nil
	}
	// "If two entities have common characters, then one of them is fully
	// contained inside another."
	aInB := a.Offset >= b.Offset && aEnd <= bEnd
	bInA := b.Offset >= a.Offset && bEnd <= aEnd
	if !aInB && !bInA {
		return fmt.Errorf("%s and %s overlap without one containing the other", a.Type, b.Type)
	}
	ka, _ := entityKindOf(a.Type)
	kb, _ := entityKindOf(b.Type)
	switch {
	// "bold, italic, underline, strikethrough, and spoiler entities can
	// contain and can be part of any other entities, except pre and code."
	case ka == kindStyle && kb != kindCode, kb == kindStyle && ka != kindCode:
		return nil
	// "blockquote and expandable_blockquote entities can't be nested."
	case ka == kindQuote && kb == kindQuote:
		return fmt.Errorf("blockquotes can't be nested")
	}
	// "All other entities can't contain each other."
	return fmt.Errorf("%s and %s can't contain each other", a.Type, b.Type)
}

// givenEntities is raw when it lists at least one entity, else "".
func givenEntities(raw string) string {
	var ents []json.RawMessage
	if json.Unmarshal([]byte(raw), &ents) != nil || len(ents) == 0 {
		return ""
	}
	return raw
}

// CheckEntities reports why the fake (so, by the documented rules, the Bot
// API) would refuse text sent with entities, the JSON of the "entities"
// or "caption_entities" parameter, or nil. Renderers' tests use it to
// hold every output to the rules sendMessage applies.
func CheckEntities(text, entities string) error {
	if !utf8.ValidString(text) {
		return fmt.Errorf("text is not valid UTF-8")
	}
	if _, e := checkEntities(text, entities); e != nil {
		return fmt.Errorf("%s", e.desc)
	}
	return nil
}
