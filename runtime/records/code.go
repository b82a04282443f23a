package records

import (
	"crypto/rand"
	"strings"
)

// codeAlphabet has no 0, O, 1 or I, so a code read aloud or retyped is
// unambiguous.
const codeAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"

// Code draws a random code of n characters that people read and type
// without mistakes: the key of a record people name in a chat (an
// approval's code, a question's id). 32^6 ≈ 10^9 codes of 6 characters
// are not guessed by someone who wants to answer another's.
func Code(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b)
}

// NormCode is a code as typed, in the form Code draws: blanks around it
// and any case accepted.
func NormCode(code string) string { return strings.ToUpper(strings.TrimSpace(code)) }
