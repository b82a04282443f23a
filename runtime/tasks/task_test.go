package tasks_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/tasks"
)

const dailyReport = `---
cron: "0 9 * * 1-5"
timezone: Europe/Berlin
chatKey: telegram:chat:-100123
---
Summarize yesterday's messages
and post the summary.
`

func TestParseReadsTheDocumentedFormat(t *testing.T) {
	task, err := tasks.Parse("daily-report", []byte(dailyReport))
	if err != nil {
		t.Fatal(err)
	}
	want := tasks.Task{Name: "daily-report", Cron: "0 9 * * 1-5", Timezone: "Europe/Berlin", ChatKey: "telegram:chat:-100123",
		Enabled: true, Instruction: "Summarize yesterday's messages\nand post the summary."}
	if task != want {
		t.Errorf("got %+v\nwant %+v", task, want)
	}
	// What Format writes reads back the same, a disabled task included.
	task.Enabled = false
	data, err := task.Format()
	if err != nil {
		t.Fatal(err)
	}
	back, err := tasks.Parse("daily-report", data)
	if err != nil || back != task {
		t.Errorf("round trip: %+v, %v\nfile:\n%s", back, err, data)
	}
	crlf := strings.ReplaceAll(dailyReport, "\n", "\r\n")
	if got, err := tasks.Parse("daily-report", []byte(crlf)); err != nil || got.Instruction != want.Instruction {
		t.Errorf("CRLF file: %+v, %v", got, err)
	}
}

func TestParseSaysWhatIsWrong(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"no frontmatter", "just text\n", `must start with a line "---"`},
		{"unclosed", "---\ncron: \"* * * * *\"\n", `must start with a line "---"`},
		{"empty head", "---\n---\nhi\n", "cron and chatKey are required"},
		{"typo", "---\ncron: \"* * * * *\"\nchatkey: api:chat:a\n---\nhi\n", "unknown field chatkey"},
		{"bad cron", "---\ncron: \"61 * * * *\"\nchatKey: api:chat:a\n---\nhi\n", `cron "61 * * * *"`},
		{"six fields", "---\ncron: \"0 0 9 * * *\"\nchatKey: api:chat:a\n---\nhi\n", "five fields"},
		{"every", "---\ncron: \"@every 5m\"\nchatKey: api:chat:a\n---\nhi\n", "@every is not supported"},
		{"tz in cron", "---\ncron: \"CRON_TZ=UTC * * * * *\"\nchatKey: api:chat:a\n---\nhi\n", "timezone field"},
		{"bad zone", "---\ncron: \"* * * * *\"\ntimezone: Mars/Olympus\nchatKey: api:chat:a\n---\nhi\n", `timezone "Mars/Olympus"`},
		{"no chat", "---\ncron: \"* * * * *\"\n---\nhi\n", "chatKey is required"},
		{"bad api chat", "---\ncron: \"* * * * *\"\nchatKey: \"api:chat:a b\"\n---\nhi\n", "an API chat is api:chat:<id>"},
		{"no instruction", "---\ncron: \"* * * * *\"\nchatKey: api:chat:a\n---\n\n", "instruction"},
		{"enabled not bool", "---\ncron: \"* * * * *\"\nchatKey: api:chat:a\nenabled: maybe\n---\nhi\n", "line 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tasks.Parse("t", []byte(tc.file))
			if !errors.Is(err, tasks.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "daily-report", "x_1", strings.Repeat("a", 64)} {
		if err := tasks.CheckName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Daily", "a.b", "../x", "a b", strings.Repeat("a", 65), "état"} {
		if err := tasks.CheckName(bad); !errors.Is(err, tasks.ErrInvalid) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func schedule(t *testing.T, cron, zone string) tasks.Schedule {
	t.Helper()
	s, err := tasks.Task{Name: "x", Cron: cron, Timezone: zone, ChatKey: "api:chat:a", Instruction: "i"}.Schedule(time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLatestAndNextSlots(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Wednesday 2026-03-04 10:30 in Berlin.
	now := time.Date(2026, 3, 4, 10, 30, 0, 0, berlin)
	for _, tc := range []struct {
		cron, zone   string
		latest, next time.Time
	}{
		{"0 9 * * 1-5", "Europe/Berlin", time.Date(2026, 3, 4, 9, 0, 0, 0, berlin), time.Date(2026, 3, 5, 9, 0, 0, 0, berlin)},
		{"* * * * *", "", now, now.Add(time.Minute)},
		{"*/20 * * * *", "", now.Add(-10 * time.Minute), now.Add(10 * time.Minute)},
		{"0 9 * * 6", "Europe/Berlin", time.Date(2026, 2, 28, 9, 0, 0, 0, berlin), time.Date(2026, 3, 7, 9, 0, 0, 0, berlin)},
		{"0 0 1 1 *", "UTC", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0 30 2 *", "UTC", time.Time{}, time.Time{}},
	} {
		s := schedule(t, tc.cron, tc.zone)
		if got := s.Latest(now); !got.Equal(tc.latest) {
			t.Errorf("%s: latest %v, want %v", tc.cron, got, tc.latest)
		}
		if got := s.Next(now); !got.Equal(tc.next) {
			t.Errorf("%s: next %v, want %v", tc.cron, got, tc.next)
		}
	}
}

func TestFolderCreateListDelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks")
	f := tasks.Folder{Dir: dir}
	task := tasks.Task{Name: "standup", Cron: "30 9 * * 1-5", Timezone: "UTC", ChatKey: "api:chat:team", Enabled: true, Instruction: "Ask for updates."}
	if err := f.Create(task); err != nil {
		t.Fatal(err)
	}
	if err := f.Create(task); !errors.Is(err, tasks.ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	if err := f.Create(tasks.Task{Name: "x", Cron: "nope", ChatKey: "api:chat:a", Instruction: "i"}); !errors.Is(err, tasks.ErrInvalid) {
		t.Errorf("invalid create: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.md"), []byte("no frontmatter"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 4, 8, 0, 0, 0, time.UTC)
	list, err := tasks.List(dir, now, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "broken" || list[0].Error == "" || list[1].Name != "standup" || list[1].Error != "" {
		t.Fatalf("list = %+v", list)
	}
	if got := list[1]; got.Cron != "30 9 * * 1-5" || got.ChatKey != "api:chat:team" || !got.Enabled ||
		!got.NextRun.Equal(time.Date(2026, 3, 4, 9, 30, 0, 0, time.UTC)) {
		t.Errorf("standup = %+v", got)
	}
	if err := f.Delete("standup"); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete("standup"); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}
