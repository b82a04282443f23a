package chat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// backwardLines yields the complete lines of the first size bytes of a file,
// last line first, reading fixed-size blocks from the end. Only as much of
// the file is read as the lines asked for need, which keeps Recent cheap on a
// large file. Bytes after the last '\n' are never returned: they are a torn
// line or a write still in progress.
type backwardLines struct {
	r     io.ReaderAt
	block int
	// start is the file offset of buf[0]; everything before it is unread.
	start int64
	// buf holds the bytes read and not yet returned. It is always a prefix
	// of its backing array.
	buf []byte
	// nls indexes the '\n's in buf, ascending. Each block is scanned once,
	// forwards (bytes.IndexByte is much faster than LastIndexByte), and a
	// line spanning many blocks is never scanned again.
	nls   []int
	spare []byte // the previous buffer, reused by the next fill
}

func newBackwardLines(r io.ReaderAt, size int64, block int) *backwardLines {
	return &backwardLines{r: r, block: block, start: size}
}

// prev returns the line before the one returned last, without its '\n', or
// io.EOF at the start of the file. The line is valid until the next call. ctx
// is checked before each block is read.
func (b *backwardLines) prev(ctx context.Context) ([]byte, error) {
	for {
		// The last '\n' ends the line; the one before it, or the start of
		// the file, begins it. Cutting buf at its beginning also drops any
		// partial line after the last '\n'.
		k := len(b.nls)
		if k >= 2 || k == 1 && b.start == 0 {
			begin := 0
			if k >= 2 {
				begin = b.nls[k-2] + 1
			}
			line := b.buf[begin:b.nls[k-1]]
			b.buf, b.nls = b.buf[:begin], b.nls[:k-1]
			return line, nil
		}
		if b.start == 0 {
			return nil, io.EOF
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := b.fill(); err != nil {
			return nil, err
		}
	}
}

// fill prepends the block before start to buf. It is called with at most
// one '\n' left in buf.
func (b *backwardLines) fill() error {
	n := int(min(int64(b.block), b.start))
	need := n + len(b.buf)
	next := b.spare
	if cap(next) < need {
		next = make([]byte, need, max(need, 2*b.block))
	}
	next = next[:need]
	got, err := b.r.ReadAt(next[:n], b.start-int64(n))
	if err != nil && !(errors.Is(err, io.EOF) && got == n) {
		return fmt.Errorf("read chat file: %w", err)
	}
	copy(next[n:], b.buf)
	b.spare = b.buf[:0]
	b.buf = next
	b.start -= int64(n)

	carried := b.nls // at most one, and it moved n bytes along
	last := -1
	if len(carried) == 1 {
		last = carried[0] + n
	}
	b.nls = b.nls[:0]
	for i := 0; ; {
		j := bytes.IndexByte(next[i:n], '\n')
		if j < 0 {
			break
		}
		b.nls = append(b.nls, i+j)
		i += j + 1
	}
	if last >= 0 {
		b.nls = append(b.nls, last)
	}
	return nil
}

// forwardLines yields the complete lines of a reader, first line first.
// Bytes after the last '\n' are never returned, as in backwardLines.
type forwardLines struct {
	br   *bufio.Reader
	long []byte // accumulates a line longer than br's buffer
}

func newForwardLines(ctx context.Context, r io.Reader, block int) *forwardLines {
	return &forwardLines{br: bufio.NewReaderSize(ctxReader{ctx: ctx, r: r}, block)}
}

// next returns the next line without its '\n', or io.EOF. The line is valid
// until the next call.
func (f *forwardLines) next() ([]byte, error) {
	line, err := f.br.ReadSlice('\n')
	if err == nil {
		return line[:len(line)-1], nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	f.long = append(f.long[:0], line...)
	for {
		line, err = f.br.ReadSlice('\n')
		f.long = append(f.long, line...)
		switch {
		case err == nil:
			return f.long[:len(f.long)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

// ctxReader stops reading once ctx is done; bufio calls Read once per block,
// which is where cancellation is checked.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
