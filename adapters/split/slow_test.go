package split
import ("os";"path/filepath";"testing";"time";"strconv";"strings";"fmt")
func TestSlow(t *testing.T) {
	files, _ := filepath.Glob(os.Getenv("CORPUS") + "/*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.SplitN(string(b), "\n", 2)
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lines[1]), "string("), ")"))
		if err != nil { continue }
		for _, limit := range []int{32,100,4096} {
			st := time.Now(); parts := Split(s, limit); d1 := time.Since(st)
			st = time.Now(); checkParts(t, s, limit, parts); d2 := time.Since(st)
			if d1+d2 > 2*time.Millisecond { fmt.Printf("%s limit %d len %d split %v check %v\n", filepath.Base(f), limit, len(s), d1, d2) }
		}
	}
}
