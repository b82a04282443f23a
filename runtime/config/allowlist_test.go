package config

import (
	"slices"
	"testing"
)

func TestFeishuAndQQAllowlistsAreRead(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"adapters": {
	  "feishu": {"allowedChatIds": ["oc_a"], "allowedUserIds": ["ou_b", "ou_c"]},
	  "qq": {"allowedChatIds": ["GROUP_OPENID"], "allowedUserIds": ["MEMBER_OPENID"]}
	}}`)
	cfg, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	f, q := cfg.Adapters.Feishu, cfg.Adapters.QQ
	if !slices.Equal(f.AllowedChatIDs, []string{"oc_a"}) || !slices.Equal(f.AllowedUserIDs, []string{"ou_b", "ou_c"}) {
		t.Errorf("feishu allowlists %q %q", f.AllowedChatIDs, f.AllowedUserIDs)
	}
	if !slices.Equal(q.AllowedChatIDs, []string{"GROUP_OPENID"}) || !slices.Equal(q.AllowedUserIDs, []string{"MEMBER_OPENID"}) {
		t.Errorf("qq allowlists %q %q", q.AllowedChatIDs, q.AllowedUserIDs)
	}
}
