package mqtt

import (
	"strings"
)

// validFilter reports whether filter is an MQTT topic filter: not empty,
// + and # only as whole levels, # only as the last.
func validFilter(filter string) bool {
	if rest, ok := strings.CutPrefix(filter, "$share/"); ok {
		group, f, ok := strings.Cut(rest, "/")
		if !ok || group == "" || strings.ContainsAny(group, "+#") {
			return false
		}
		filter = f
	}
	if filter == "" {
		return false
	}
	for {
		level, rest, more := strings.Cut(filter, "/")
		if level != "+" && level != "#" && strings.ContainsAny(level, "+#") || level == "#" && more {
			return false
		}
		if !more {
			return true
		}
		filter = rest
	}
}

// matchFilter reports whether topic matches the MQTT topic filter: + stands
// for one level, a trailing # for any number of levels (none included),
// $share/GROUP/ is left out, and a wildcard at the first level does not
// match a topic starting with $ (MQTT 3.1.1, 4.7.2).
func matchFilter(filter, topic string) bool {
	if rest, ok := strings.CutPrefix(filter, "$share/"); ok {
		_, filter, _ = strings.Cut(rest, "/")
	}
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	for {
		f, fRest, fMore := strings.Cut(filter, "/")
		if f == "#" {
			return true
		}
		t, tRest, tMore := strings.Cut(topic, "/")
		if f != "+" && f != t {
			return false
		}
		switch {
		case !fMore && !tMore:
			return true
		case !tMore:
			// "a/#" matches "a" too.
			return fRest == "#"
		case !fMore:
			return false
		}
		filter, topic = fRest, tRest
	}
}

// matchTemplate reports whether topic has the shape of a TopicTags
// template: a {name} or + segment matches any one level, a trailing # any
// number of levels, and any other segment only itself.
func matchTemplate(tmpl, topic string) bool {
	for {
		s, sRest, sMore := strings.Cut(tmpl, "/")
		if s == "#" && !sMore {
			return true
		}
		t, tRest, tMore := strings.Cut(topic, "/")
		if s != "+" && !(strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}")) && s != t {
			return false
		}
		switch {
		case !sMore && !tMore:
			return true
		case !tMore:
			return sRest == "#"
		case !sMore:
			return false
		}
		tmpl, topic = sRest, tRest
	}
}

// topicEscaper percent-encodes what a tag value may not carry into a topic
// level: the level separator, the wildcards, NUL (forbidden in MQTT
// strings) and the escape character itself, so that the encoding can be
// undone.
var topicEscaper = strings.NewReplacer("%", "%25", "/", "%2F", "+", "%2B", "#", "%23", "\x00", "%00")

// escapeLevel returns v fit to be one topic level.
func escapeLevel(v string) string {
	if !strings.ContainsAny(v, "%/+#\x00") {
		return v
	}
	return topicEscaper.Replace(v)
}
