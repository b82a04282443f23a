package skills_test

import (
	"fmt"
	"testing"
)

// BenchmarkPromptSection is what every run pays to list the skills: a
// look at the folders, the headers coming from the cache.
func BenchmarkPromptSection(b *testing.B) {
	p := newProject(b)
	for i := range 40 {
		writeSkill(b, p.skills, fmt.Sprintf("skill-%02d", i), "description: Does thing number "+fmt.Sprint(i)+".", "body")
	}
	cat := p.catalog(b)
	b.ResetTimer()
	for b.Loop() {
		if cat.PromptSection() == "" {
			b.Fatal("no skills")
		}
	}
}
