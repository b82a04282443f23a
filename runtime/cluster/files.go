package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/media"
)

// bucketFiles is the object store of received files (photos, voice notes,
// documents): the replica that receives a platform event puts the file
// here before the message is queued, and the replica that runs the turn
// fetches it when it is not on its own disk.
const bucketFiles = "ship_files"

// The object store's stream and subjects, as JetStream's object store
// lays them out (ADR-20): nats.go binds to a stream of this shape by name.
const (
	filesStream   = "OBJ_" + bucketFiles
	filesChunks   = "$O." + bucketFiles + ".C.>"
	filesMetadata = "$O." + bucketFiles + ".M.>"
)

// setupFiles creates (or updates) the ship_files object store. The stream
// is made here rather than by CreateOrUpdateObjectStore, for two settings
// nats.go does not offer:
//   - Discard old: the bucket is kept within the local folder's bounds
//     (media.MaxTotalBytes, media.MaxAge: 1 GiB, 30 days), and once full
//     the oldest files go, as PruneFiles does on disk. nats.go's discard
//     new would refuse every new file instead, until old ones expired.
//   - No direct get: a direct get may be answered by a follower that has
//     not applied the last put yet, and the turn's replica looks a file
//     up right after the receiving one put it. Without direct get, the
//     lookup goes to the stream leader (the chunks always come from the
//     leader, through an ordered consumer).
func (n *Node) setupFiles(ctx context.Context) error {
	_, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        filesStream,
		Description: "received files, for the replica that runs the turn",
		Subjects:    []string{filesChunks, filesMetadata},
		MaxAge:      media.MaxAge,
		MaxBytes:    media.MaxTotalBytes,
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		Replicas:    n.opts.Replicas,
		AllowRollup: true,
	})
	if err != nil {
		return fmt.Errorf("object store %s: %w", bucketFiles, err)
	}
	obs, err := n.js.ObjectStore(ctx, bucketFiles)
	if err != nil {
		return fmt.Errorf("object store %s: %w", bucketFiles, err)
	}
	n.files = obs
	return nil
}

// Files is the received files' store shared by the replicas
// (media.Shared), over the ship_files object store.
func (n *Node) Files() media.Shared { return sharedFiles{n: n} }

// sharedFiles implements media.Shared.
type sharedFiles struct{ n *Node }

// errBadName refuses a name that could lead out of the files folder once
// fetched to disk.
var errBadName = errors.New("not a file name below " + media.Dir)

// checkName allows only the names media.Store makes: a relative,
// clean, slash-separated path without "." or ".." elements.
func checkName(name string) error {
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || strings.ContainsAny(name, "\\\x00") {
		return fmt.Errorf("shared file %q: %w", name, errBadName)
	}
	for _, el := range strings.Split(name, "/") {
		if el == "." || el == ".." {
			return fmt.Errorf("shared file %q: %w", name, errBadName)
		}
	}
	return nil
}

// Put implements media.Shared: the whole file, retried (from its start)
// while a stream leader is elected.
func (s sharedFiles) Put(ctx context.Context, name string, r io.ReadSeeker) error {
	if err := checkName(name); err != nil {
		return err
	}
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("putting %s into %s: %w", name, bucketFiles, err)
	}
	return s.n.retrySized(ctx, "putting "+name+" into "+bucketFiles, size, func(ctx context.Context) error {
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return permanent{err}
		}
		_, err := s.n.files.Put(ctx, jetstream.ObjectMeta{Name: name}, r)
		return err
	})
}

// Get implements media.Shared. Finding the object is retried while a
// stream leader is elected; the copy is not (w has its bytes by then).
func (s sharedFiles) Get(ctx context.Context, name string, w io.Writer, max int64) error {
	if err := checkName(name); err != nil {
		return err
	}
	return s.n.retrySized(ctx, "fetching "+name+" from "+bucketFiles, max, func(ctx context.Context) error {
		res, err := s.n.files.Get(ctx, name)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return permanent{fmt.Errorf("%w (pruned or expired, or never shared)", fs.ErrNotExist)}
		}
		if err != nil {
			return err
		}
		defer res.Close()
		info, err := res.Info()
		if err != nil {
			return err
		}
		if int64(info.Size) > max {
			return permanent{fmt.Errorf("%w: %s, over %s", media.ErrTooLarge, media.Size(int64(info.Size)), media.Size(max))}
		}
		n, err := io.Copy(w, io.LimitReader(res, max+1))
		if err != nil {
			return permanent{err}
		}
		if n > max {
			return permanent{fmt.Errorf("%w: over %s", media.ErrTooLarge, media.Size(max))}
		}
		return nil
	})
}

// retrySized is retryHot for a transfer of size bytes: each attempt also
// gets a second per MiB (far slower than any link replicas run on), so a
// large document is not cut off by the 5 s a request gets.
func (n *Node) retrySized(ctx context.Context, doing string, size int64, fn func(context.Context) error) error {
	attempt := 5*time.Second + time.Duration(size>>20)*time.Second
	ctx, cancel := context.WithTimeout(ctx, hotPathBudget+attempt)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		actx, acancel := context.WithTimeout(ctx, attempt)
		err := fn(actx)
		acancel()
		if err == nil {
			return nil
		}
		if p, ok := err.(permanent); ok {
			return fmt.Errorf("%s: %w", doing, p.error)
		}
		if errors.Is(err, nats.ErrConnectionClosed) || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", doing, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", doing, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}
