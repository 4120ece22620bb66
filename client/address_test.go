package client

import "testing"

func TestHTTPBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8000":             "http://127.0.0.1:8000",
		"localhost:8000/":            "http://localhost:8000",
		"http://127.0.0.1:8000/":     "http://127.0.0.1:8000",
		"https://example.com/kserve": "https://example.com/kserve",
		" 127.0.0.1:8000 ":           "http://127.0.0.1:8000",
	} {
		if got, err := HTTPBaseURL(in); err != nil || got != want {
			t.Errorf("HTTPBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ftp://host:1", "http://", "host:8000?x=1"} {
		if got, err := HTTPBaseURL(in); err == nil {
			t.Errorf("HTTPBaseURL(%q) = %q, want an error", in, got)
		}
	}
	if _, err := GRPCAddress("grpc://127.0.0.1:8001"); err == nil {
		t.Error("GRPCAddress accepted a URL")
	}
	if a, err := GRPCAddress("127.0.0.1:8001"); err != nil || a != "127.0.0.1:8001" {
		t.Errorf("GRPCAddress = %q, %v", a, err)
	}
}
