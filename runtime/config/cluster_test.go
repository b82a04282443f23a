package config

import (
	"errors"
	"strings"
	"testing"
)

func TestReplicaNamesAreLettersDigitsDashAndUnderscore(t *testing.T) {
	cases := map[string]bool{
		"a": true, "replica-1_B": true, strings.Repeat("r", 64): true,
		strings.Repeat("r", 65): false, "a.b": false, "a b": false, "é": false, "a/b": false, "a*": false,
	}
	for name, ok := range cases {
		dir := t.TempDir()
		write(t, dir, FileName, `{"cluster": {"replica": "`+name+`", "nats": {"url": "nats://127.0.0.1:4222"}}}`)
		cfg, err := Load(dir, envOf(nil))
		if ok && (err != nil || cfg.Cluster.Replica != name) {
			t.Errorf("replica %q: %v, want it accepted", name, err)
		}
		if !ok && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cluster.replica")) {
			t.Errorf("replica %q: err = %v, want one naming cluster.replica", name, err)
		}
	}
}
