package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// newLogger writes human-friendly lines to a terminal and JSON otherwise
// (systemd, docker, CI), and with fileDir set also JSON to fileDir/ship.log.
// The returned close function flushes the file.
func newLogger(stderr io.Writer, level, fileDir string) (zerolog.Logger, func() error, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	var out io.Writer = stderr
	if f, ok := stderr.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		out = zerolog.ConsoleWriter{Out: stderr, TimeFormat: time.TimeOnly}
	}
	closeFn := func() error { return nil }
	if fileDir != "" {
		if err := os.MkdirAll(fileDir, 0o755); err != nil {
			return zerolog.Logger{}, nil, fmt.Errorf("creating log folder: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(fileDir, "ship.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return zerolog.Logger{}, nil, fmt.Errorf("opening log file: %w", err)
		}
		out = zerolog.MultiLevelWriter(out, f)
		closeFn = f.Close
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), closeFn, nil
}
