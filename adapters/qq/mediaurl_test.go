package qq

import "testing"

func TestMediaURL(t *testing.T) {
	for _, tc := range []struct {
		raw, scheme, want string
	}{
		{"//multimedia.nt.qq.com.cn/download?appid=1407&fileid=abc", "https", "https://multimedia.nt.qq.com.cn/download?appid=1407&fileid=abc"},
		{"//127.0.0.1:8080/media/a.png", "http", "http://127.0.0.1:8080/media/a.png"},
		{"https://multimedia.nt.qq.com.cn/x.png", "http", "https://multimedia.nt.qq.com.cn/x.png"},
		{"http://10.0.0.1/x.png", "https", "http://10.0.0.1/x.png"},
		{"gchat.qpic.cn/gchatpic_new/1/2/0", "https", "https://gchat.qpic.cn/gchatpic_new/1/2/0"},
	} {
		got, err := mediaURL(tc.raw, tc.scheme)
		if err != nil || got != tc.want {
			t.Errorf("mediaURL(%q, %s) = %q, %v; want %q", tc.raw, tc.scheme, got, err, tc.want)
		}
	}
	for _, raw := range []string{"", "/media/a.png", "ftp://host/a.png", "///a.png", "file:///etc/passwd"} {
		if got, err := mediaURL(raw, "https"); err == nil {
			t.Errorf("mediaURL(%q) = %q, want an error", raw, got)
		}
	}
}

func TestMediaScheme(t *testing.T) {
	for base, want := range map[string]string{
		DefaultAPIBase: "https", DefaultSandboxAPIBase: "https", "http://127.0.0.1:9": "http", "": "https", "::bad": "https",
	} {
		if got := mediaScheme(base); got != want {
			t.Errorf("mediaScheme(%q) = %s, want %s", base, got, want)
		}
	}
}
