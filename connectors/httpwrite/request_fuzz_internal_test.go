package httpwrite

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzRequest drives what this package parses around the particle
// decoder: the query (destination and precision), the gzip body within
// the size limit, and the name that carries the precision into the
// spool. Whatever the request, the answer is an error with a status or a
// decoded body whose every line is a particle or a bad line, and the
// spooled name gives back the request's precision.
func FuzzRequest(f *testing.F) {
	f.Add("bucket=b&precision=ms", false, []byte("env,room=a t=1 1700000000000\nbad\n"))
	f.Add("db=d&precision=u&p=secret", true, []byte("env t=1\n"))
	f.Add("bucket=b&precision=h", false, []byte(""))
	f.Add("org=o", true, []byte("\x1f\x8b\x08"))
	f.Add("bucket=%zz", false, []byte("env t=\"open\nenv t=2 2\n"))
	s, err := NewSource(Config{StateDir: f.TempDir(), MaxBodySize: 4096})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, query string, zipped bool, raw []byte) {
		body := raw
		req := httptest.NewRequest(http.MethodPost, "/api/v2/write", nil)
		req.URL.RawQuery = query
		if zipped {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = zw.Write(raw)
			_ = zw.Close()
			body = b.Bytes()
			req.Header.Set("Content-Encoding", "gzip")
		}
		req.Body = http.NoBody
		if len(body) > 0 {
			req.Body = readCloser{bytes.NewReader(body)}
		}
		for _, a := range []api{apiV1, apiV2} {
			source, prec, err := a.target(req.URL.Query())
			if err != nil {
				wantStatus(t, err, http.StatusBadRequest)
				continue
			}
			if got, err := precisionOf(source); err != nil || got != prec {
				t.Fatalf("spooled name %q gives precision %v, %v; want %v", source, got, err, prec)
			}
		}
		var charge int64
		got, err := s.readBody(httptest.NewRecorder(), req, &charge)
		if err != nil {
			wantStatus(t, err, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
			return
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("body read as %q, sent %q", got, body)
		}
		sc, err := s.scan("/api/v2/write?bucket=b", 0, 1, got, &charge)
		if err != nil {
			wantStatus(t, err, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
			return
		}
		if lines := bytes.Count(raw, []byte("\n")) + 1; sc.valid+sc.bad > lines {
			t.Fatalf("%d particles and %d bad lines from %d lines", sc.valid, sc.bad, lines)
		}
		for _, l := range sc.listed {
			if l.err.Line < 1 {
				t.Fatalf("bad line without a position: %v", l.err)
			}
		}
		// A body is charged as sent, and a gzip body also decompressed.
		want := int64(len(body))
		if zipped {
			want += sc.size
		}
		if charge != want {
			t.Fatalf("charged %d for a body of %d bytes, %d decompressed", charge, len(body), sc.size)
		}
		s.stats.InFlightBytes.Add(-charge)
	})
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func wantStatus(t *testing.T, err error, statuses ...int) {
	t.Helper()
	re, ok := errors.AsType[*requestError](err)
	if !ok {
		t.Fatalf("error without a status: %v", err)
	}
	for _, s := range statuses {
		if re.status == s {
			return
		}
	}
	t.Fatalf("status %d for %v, want one of %v", re.status, err, statuses)
}
