package profiles

import (
	"strings"
	"testing"
)

func TestExplicitPicks(t *testing.T) {
	for text, want := range map[string][2]string{
		"/agent coder fix it":          {"coder", "fix it"},
		"/agent@ship_bot coder fix it": {"coder", "fix it"},
		"  @coder fix it":              {"coder", "fix it"},
		"@coder\nfix it":               {"coder", "fix it"},
		"/agents coder":                {"", ""},
		"hello @coder":                 {"", ""},
		"@ hi":                         {"", ""},
		"@co.der hi":                   {"", ""},
	} {
		name, rest, ok := Explicit(text)
		if got := [2]string{name, rest}; got != want || ok != (want[0] != "") {
			t.Errorf("Explicit(%q) = %q %v, want %q", text, got, ok, want)
		}
	}
}

func TestTheMostSpecificBindingWins(t *testing.T) {
	s, err := New([]Profile{
		{Name: "ops", Chats: []string{"telegram:*"}},
		{Name: "coder", Chats: []string{"telegram:chat:-100123*", "qq:group:?"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"telegram:chat:-1001234:topic:5": "coder bound:telegram:chat:-100123*",
		"telegram:chat:42":               "ops bound:telegram:*",
		"qq:group:7":                     "coder bound:qq:group:?",
		"qq:group:77":                    "default default",
		"feishu:chat:oc_1":               "default default",
	} {
		d := s.Route(key, "hi")
		if got := d.Profile.Name + " " + d.Reason; got != want {
			t.Errorf("Route(%s) = %s, want %s", key, got, want)
		}
	}
}

func TestBadProfilesAreRefused(t *testing.T) {
	for want, ps := range map[string][]Profile{
		"listed twice":         {{Name: "a"}, {Name: "a"}},
		"only * and ?":         {{Name: "a", Chats: []string{"tele{gram}:*"}}},
		"blanks and control":   {{Name: "a", Chats: []string{"telegram: chat"}}},
		"only letters, digits": {{Name: "a b"}},
	} {
		if _, err := New(ps); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%+v) = %v, want an error with %q", ps, err, want)
		}
	}
}
