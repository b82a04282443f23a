package fakelark

import (
	"encoding/json"
	"fmt"
)

// CodeBadCard is the send and update APIs' answer to a card Feishu cannot
// build ("230099 Failed to create card content", error codes of
// https://open.feishu.cn/document/server-docs/im-v1/message/create); the
// msg carries the card service's own code and reason after "ext=", as the
// real answers do.
const CodeBadCard = 230099

// maxCardElements is how many components one JSON 2.0 card may hold
// (https://open.feishu.cn/document/feishu-cards/card-json-v2-structure,
// "a card holds at most 200 elements or components").
const maxCardElements = 200

// cardTags2 are the components of card JSON 2.0
// (https://open.feishu.cn/document/feishu-cards/card-json-v2-components/component-json-v2-overview).
// The "action" module and the "note" component of JSON 1.0 are gone in
// 2.0 (https://open.feishu.cn/document/feishu-cards/card-json-v2-breaking-changes-release-notes):
// a 2.0 card with them is refused.
var cardTags2 = map[string]bool{
	"markdown": true, "div": true, "hr": true, "img": true, "img_combination": true,
	"column_set": true, "column": true, "collapsible_panel": true, "form": true,
	"interactive_container": true, "button": true, "overflow": true, "input": true,
	"select_static": true, "multi_select_static": true, "select_person": true,
	"multi_select_person": true, "date_picker": true, "picker_time": true,
	"picker_datetime": true, "select_img": true, "checker": true, "chart": true,
	"table": true, "person": true, "person_list": true, "avatar": true, "audio": true,
}

// cardTags1 are the elements of the old card JSON 1.0
// (https://open.feishu.cn/document/common-capabilities/message-card/message-cards-content/card-structure/card-content).
var cardTags1 = map[string]bool{
	"div": true, "markdown": true, "hr": true, "img": true, "note": true, "action": true,
	"column_set": true, "column": true, "button": true, "overflow": true,
	"select_static": true, "date_picker": true, "picker_time": true, "picker_datetime": true,
	"collapsible_panel": true, "form": true, "input": true, "chart": true, "table": true,
}

// buttonBehaviors are a 2.0 button's behaviors
// (https://open.feishu.cn/document/feishu-cards/card-json-v2-components/interactive-components/button,
// "behaviors": open_url, callback, form_action).
var buttonBehaviors = map[string]bool{"open_url": true, "callback": true, "form_action": true}

// badCard is the error of a card that fails validation.
func badCard(detail string, args ...any) error {
	return fmt.Errorf("Failed to create card content, ext=ErrCode: 200621; ErrMsg: %s", fmt.Sprintf(detail, args...))
}

// validateCard checks a card's JSON the way the card service does before
// a card message is created or updated.
func validateCard(content string) error {
	var card struct {
		Schema   *string           `json:"schema"`
		Elements []json.RawMessage `json:"elements"`
		Body     *struct {
			Elements []json.RawMessage `json:"elements"`
		} `json:"body"`
	}
	if err := json.Unmarshal([]byte(content), &card); err != nil {
		return badCard("parse card json err, please check whether the card json is correct")
	}
	tags, elements := cardTags1, card.Elements
	switch {
	case card.Schema == nil:
	case *card.Schema == "2.0":
		if card.Body == nil || card.Body.Elements == nil {
			return badCard("body.elements is required in card JSON 2.0")
		}
		tags, elements = cardTags2, card.Body.Elements
	default:
		return badCard("unsupported schema %q", *card.Schema)
	}
	n := 0
	var walk func([]json.RawMessage) error
	walk = func(raws []json.RawMessage) error {
		for _, raw := range raws {
			n++
			var el struct {
				cardElement
				Content *string `json:"content"`
			}
			if err := json.Unmarshal(raw, &el); err != nil {
				return badCard("element is not an object")
			}
			if !tags[el.Tag] {
				return badCard("unknown tag %q", el.Tag)
			}
			switch el.Tag {
			case "markdown":
				if el.Content == nil {
					return badCard("markdown element has no content")
				}
			case "button":
				if el.Text == nil || el.Text.Content == "" {
					return badCard("button has no text")
				}
				for _, b := range el.Behaviors {
					if !buttonBehaviors[b.Type] {
						return badCard("unknown button behavior %q", b.Type)
					}
				}
			}
			if err := walk(el.Actions); err != nil {
				return err
			}
			if err := walk(el.Elements); err != nil {
				return err
			}
			for _, c := range el.Columns {
				if err := walk(c.Elements); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(elements); err != nil {
		return err
	}
	if card.Schema != nil && n > maxCardElements {
		return badCard("the card has %d components, more than %d", n, maxCardElements)
	}
	return nil
}
