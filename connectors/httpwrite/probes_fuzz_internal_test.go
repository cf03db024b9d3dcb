package httpwrite

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzQuery sends any q to /query: the answer is a 200 with a JSON
// result per statement, or a 400 naming what is not answered; a
// database CREATE DATABASE names is never empty nor has a quote.
func FuzzQuery(f *testing.F) {
	for _, q := range []string{
		"SHOW DATABASES", `CREATE DATABASE "telegraf"`, "create database x with duration 1d; show  databases",
		"SELECT * FROM m", "CREATE DATABASE", `CREATE DATABASE "`, "CREATEDATABASE x", "CREATE DATABAſE x", ";;",
	} {
		f.Add(q)
	}
	s, err := NewSource(Config{StateDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	h := s.handler()
	f.Fuzz(func(t *testing.T, q string) {
		if name, ok := createDatabase(q); ok && (name == "" || strings.Contains(name, `"`)) {
			t.Fatalf("createDatabase(%q) = %q", q, name)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/query?q="+url.QueryEscape(q), nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("q %q: answer %q: %v", q, rec.Body, err)
		}
		switch rec.Code {
		case http.StatusOK:
			if _, ok := body["results"]; !ok {
				t.Fatalf("q %q: 200 without results: %s", q, rec.Body)
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("q %q: status %d", q, rec.Code)
		}
	})
}
