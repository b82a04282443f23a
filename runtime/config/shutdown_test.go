package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestShutdownGraceIsReadWithItsDefault(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{}`)
	cfg, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.Shutdown.Grace(); g != 30*time.Second {
		t.Errorf("default grace = %s, want 30s", g)
	}
	write(t, dir, FileName, `{"shutdown": {"graceSeconds": 120}}`)
	if cfg, err = Load(dir, envOf(nil)); err != nil || cfg.Shutdown.Grace() != 2*time.Minute {
		t.Errorf("graceSeconds 120 gives %s, %v", cfg.Shutdown.Grace(), err)
	}
}

func TestBadShutdownSectionStopsStartUp(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{`{"shutdown": {"graceSeconds": -1}}`, "shutdown.graceSeconds is -1"},
		{`{"shutdown": {"graceSeconds": 86400}}`, "shutdown.graceSeconds is 86400"},
		{`{"shutdown": {"grace": 30}}`, "unknown field"},
	} {
		dir := t.TempDir()
		write(t, dir, FileName, c.file)
		_, err := Load(dir, envOf(nil))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid-configuration error saying %q", c.file, err, c.want)
		}
	}
}
