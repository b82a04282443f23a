//go:build linux

package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// bwrapCheckTimeout bounds the one check that bwrap works.
const bwrapCheckTimeout = 10 * time.Second

// bwrapLayout is what the sandbox shows of the host's file system, found
// once by the check.
type bwrapLayout struct {
	system []string // the read-only system's bwrap arguments
	roots  []string // host paths visible at the same path inside
}

func findBwrap(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("bwrap was not found (%w): install bubblewrap (apt-get install bubblewrap) and restart ship", err)
	}
	return path, nil
}

// systemLayout binds the system read-only: /usr, /etc and the top-level
// /bin, /sbin, /lib* (as the symlinks they are on a merged-/usr system).
// Not "/" itself: /root, /home, /run, /var, other projects and ship's own
// folder stay out of sight. With the network on, a resolv.conf that links
// out of /etc (systemd-resolved's, under /run) is bound too, or no name
// would resolve.
func systemLayout(network bool) bwrapLayout {
	l := bwrapLayout{system: []string{"--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"}, roots: []string{"/usr", "/etc"}}
	for _, p := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			l.system = append(l.system, "--ro-bind", p, p)
			l.roots = append(l.roots, p)
			continue
		}
		if target, err := os.Readlink(p); err == nil {
			l.system = append(l.system, "--symlink", target, p)
		}
	}
	if network {
		if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !under(real, l.roots) {
			l.system = append(l.system, "--ro-bind", real, real)
		}
	}
	return l
}

// probeBwrap runs `:` in the sandbox once, exactly as a command would run,
// so a bwrap that cannot create namespaces here (no unprivileged user
// namespaces, a container's seccomp profile) is found before a command
// depends on it; and asks its version.
func probeBwrap(ctx context.Context, s *sandbox) (bwrapLayout, string, error) {
	ctx, cancel := context.WithTimeout(ctx, bwrapCheckTimeout)
	defer cancel()
	layout := systemLayout(s.network)
	if s.dir == "/" {
		return layout, "", errors.New("the project folder is /, which the sandbox could not hide anything from")
	}
	argv := bwrapArgv(s, layout, ":")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(clipText(out.String(), 300))
		return layout, "", fmt.Errorf("bwrap does not work here (%w: %s); it needs to create namespaces: as a non-root user, "+
			"unprivileged user namespaces must be enabled (sysctl kernel.unprivileged_userns_clone=1), and in a container "+
			"the seccomp profile must allow them", err, msg)
	}
	ver, err := exec.CommandContext(ctx, s.bwrap, "--version").Output()
	if err != nil {
		return layout, "", fmt.Errorf("asking bwrap its version: %w", err)
	}
	return layout, "bwrap " + strings.TrimPrefix(strings.TrimSpace(string(ver)), "bubblewrap "), nil
}

// bwrapArgv is the command line that runs `sh -c command` in the sandbox:
//
//   - every namespace of its own (user, pid, net, ipc, uts, cgroup): it
//     cannot see ship's process, signal or trace it, and has no network
//     (not even the host's loopback, where ship's API listens) unless
//     tools.exec.network keeps the host's;
//   - --die-with-parent and a pid namespace: when bwrap dies (the command
//     ended, or its process group was killed on timeout) the kernel kills
//     every process in the namespace, setsid and daemons included;
//   - --new-session: no TIOCSTI into a terminal ship may have;
//   - --cap-drop ALL, even as root;
//   - the system read-only, a fresh /proc (only the sandbox's processes),
//     a minimal /dev, a private /tmp, and the root read-only;
//   - the project folder read-write at its own path, with ship's own files
//     hidden (maskArgs);
//   - an environment of its own (sandboxEnv), none of ship's.
func bwrapArgv(s *sandbox, layout bwrapLayout, command string) []string {
	args := []string{s.bwrap, "--unshare-all"}
	if s.network {
		args = append(args, "--share-net")
	}
	args = append(args, "--die-with-parent", "--new-session", "--cap-drop", "ALL")
	args = append(args, layout.system...)
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", s.dir, s.dir)
	args = append(args, maskArgs(s.dir, s.hidden, append([]string{s.dir}, layout.roots...))...)
	args = append(args, "--chdir", s.dir, "--remount-ro", "/", "--clearenv")
	for _, kv := range sandboxEnv(s.dir) {
		name, value, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", name, value)
	}
	return append(args, "--", "/bin/sh", "-c", command)
}

// maskArgs hides each of names in dir: a file behind a read-only
// /dev/null, a folder behind an empty read-only tmpfs. Both are mount
// points, so a command cannot remove, rename or write them either.
//
// They are looked at on every command rather than once, so a .env or
// .ship made after start-up is hidden too; one that is created while a
// command runs is not, until the next command. A name that is a symlink is
// hidden where it leads, when that is visible in the sandbox (roots); one
// leading elsewhere, or nowhere, shows nothing anyway. Files come before
// folders, so a file inside a hidden folder is masked before the folder
// is covered. dir has its symlinks resolved (sandboxDir), so a name that
// is one plain file or folder costs one lstat; only a symlink is followed.
func maskArgs(dir string, names, roots []string) []string {
	var files, dirs []string
	for _, name := range names {
		real := filepath.Join(dir, name)
		fi, err := os.Lstat(real)
		if err == nil && (fi.Mode()&os.ModeSymlink != 0 || strings.ContainsRune(name, filepath.Separator)) {
			if real, err = filepath.EvalSymlinks(real); err == nil {
				fi, err = os.Stat(real)
			}
		}
		if err != nil || !under(real, roots) {
			continue
		}
		if fi.IsDir() {
			dirs = append(dirs, "--tmpfs", real, "--remount-ro", real)
		} else {
			files = append(files, "--ro-bind", "/dev/null", real)
		}
	}
	return append(files, dirs...)
}

// under says whether path is one of roots or inside one.
func under(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// argv is the command line for a sandboxed command; check must have found
// the sandbox active.
func (s *sandbox) argv(command string) []string { return bwrapArgv(s, s.layout, command) }
