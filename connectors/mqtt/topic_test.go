package mqtt

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMatchFilter(t *testing.T) {
	for _, tc := range []struct {
		filter, topic string
		want          bool
	}{
		{"sensors/#", "sensors/a/b", true},
		{"sensors/#", "sensors", true},
		{"sensors/#", "other/a", false},
		{"sensors/+", "sensors/a", true},
		{"sensors/+", "sensors/a/b", false},
		{"sensors/+", "sensors", false},
		{"sensors/+", "sensors/", true},
		{"+/+", "a/b", true},
		{"#", "a/b/c", true},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"a/b", "a/b", true},
		{"a/b", "a/bc", false},
		{"a/b/c", "a/b", false},
		{"$share/g/sensors/#", "sensors/a", true},
		{"$share/g/sensors/+", "other/a", false},
	} {
		assert.Equal(t, tc.want, matchFilter(tc.filter, tc.topic), "%s ~ %s", tc.filter, tc.topic)
	}
}

func TestValidFilter(t *testing.T) {
	for filter, want := range map[string]bool{
		"a/#": true, "#": true, "+/b/+": true, "$share/g/a/#": true, "a//b": true, "/": true,
		"": false, "a/#/b": false, "#/#": false, "a#": false, "a/b+": false, "$share/g": false, "$share//a": false, "$share/g/": false,
	} {
		assert.Equal(t, want, validFilter(filter), "%q", filter)
	}
}

func TestMatchTemplate(t *testing.T) {
	for _, tc := range []struct {
		tmpl, topic string
		want        bool
	}{
		{"sensors/{room}/{sensor}", "sensors/k/t1", true},
		{"sensors/{room}/{sensor}", "sensors/k", false},
		{"sensors/{room}/{sensor}", "sensors/k/t1/x", false},
		{"sensors/{room}/{sensor}", "other/k/t1", false},
		{"sensors/{room}/{sensor}", "sensors//t1", true},
		{"+/{sensor}", "any/t1", true},
		{"sensors/{sensor}/#", "sensors/t1", true},
		{"sensors/{sensor}/#", "sensors/t1/a/b", true},
		{"{a}", "x", true},
		{"{a}", "x/y", false},
	} {
		assert.Equal(t, tc.want, matchTemplate(tc.tmpl, tc.topic), "%s ~ %s", tc.tmpl, tc.topic)
	}
}

// refMatch is matchFilter written the obvious way, level by level.
func refMatch(filter, topic string) bool {
	if rest, ok := strings.CutPrefix(filter, "$share/"); ok {
		_, filter, _ = strings.Cut(rest, "/")
	}
	f, tp := strings.Split(filter, "/"), strings.Split(topic, "/")
	if strings.HasPrefix(topic, "$") && (f[0] == "+" || f[0] == "#") {
		return false
	}
	for i, s := range f {
		switch {
		case s == "#" && i == len(f)-1:
			return true
		case i >= len(tp), s != "+" && s != tp[i]:
			return false
		}
	}
	return len(f) == len(tp)
}

func FuzzMatchFilter(f *testing.F) {
	for _, s := range [][2]string{{"a/#", "a"}, {"+/b", "a/b"}, {"#", "$x"}, {"a/+/c", "a//c"}, {"$share/g/a/#", "a/b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, filter, topic string) {
		if !validFilter(filter) || strings.ContainsAny(topic, "+#") {
			return // not a valid filter or topic
		}
		if got, want := matchFilter(filter, topic), refMatch(filter, topic); got != want {
			t.Fatalf("matchFilter(%q, %q) = %v, want %v", filter, topic, got, want)
		}
	})
}

// FuzzEscapeLevel checks that an escaped tag value is one topic level
// without wildcards, from which the value can be read back.
func FuzzEscapeLevel(f *testing.F) {
	for _, s := range []string{"in/x", "a+b#", "50%", "plain", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		level := escapeLevel(v)
		if strings.ContainsAny(level, "/+#\x00") {
			t.Fatalf("escapeLevel(%q) = %q", v, level)
		}
		back, err := url.PathUnescape(level)
		if err != nil || back != v {
			t.Fatalf("escapeLevel(%q) = %q, unescapes to %q, %v", v, level, back, err)
		}
	})
}
