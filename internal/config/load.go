package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// EnvPrefix starts every environment override. A key's variable is the
// prefix plus its YAML path in upper case joined by "_", e.g.
// AGENTFLEET_NATS_URL, AGENTFLEET_WORKER_CONCURRENCY,
// AGENTFLEET_MODEL_SIM_FAULTS.
const EnvPrefix = "AGENTFLEET_"

// LoadFile decodes a YAML file over dst (keys it lacks keep dst's values).
// Unknown keys are an error, so a typo does not silently fall back to a
// default.
func LoadFile(path string, dst any) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	return nil
}

// ApplyEnv sets every field whose variable lookup returns a value. It
// returns the names of the variables it used.
func ApplyEnv(dst any, lookup func(string) (string, bool)) ([]string, error) {
	var used []string
	var errs []error
	walk(reflect.ValueOf(dst).Elem(), nil, func(path []string, v reflect.Value) {
		name := EnvPrefix + strings.ToUpper(strings.Join(path, "_"))
		s, ok := lookup(name)
		if !ok {
			return
		}
		if err := setValue(v, s); err != nil {
			errs = append(errs, fmt.Errorf("config: %s: %w", name, err))
			return
		}
		used = append(used, name)
	})
	return used, errors.Join(errs...)
}

// EnvNames lists every environment variable that overrides a key of dst.
func EnvNames(dst any) []string {
	var out []string
	walk(reflect.ValueOf(dst).Elem(), nil, func(path []string, _ reflect.Value) {
		out = append(out, EnvPrefix+strings.ToUpper(strings.Join(path, "_")))
	})
	return out
}

var durationType = reflect.TypeOf(time.Duration(0))

func walk(v reflect.Value, path []string, leaf func([]string, reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		p := append(append([]string(nil), path...), tag)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			walk(fv, p, leaf)
			continue
		}
		leaf(p, fv)
	}
}

func setValue(v reflect.Value, s string) error {
	if v.Type() == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return err
		}
		v.SetUint(n)
	case reflect.Float64, reflect.Float32:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		v.SetFloat(n)
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}

// RedactURL removes the secrets from a URL's user info, for logs and
// errors:
//
//   - a password is replaced by REDACTED, the user name kept;
//   - a user name without a password is replaced too when the URL is a NATS
//     server URL (scheme nats, tls, ws or wss, or no scheme, which nats.go
//     reads as nats://): nats.go sends it as the CONNECT auth token
//     ("nats://TOKEN@host"), so it is the credential itself;
//   - a user name without a password in any other URL is kept: in
//     redis:// and rediss:// it is the Redis ACL user name, not a secret,
//     and an operator needs it to tell which user failed.
//
// A comma-separated list of URLs (NATS seed servers: more than one "://")
// is redacted server by server; a comma in one URL (a password may hold
// one) is left to url.Parse. A URL that does not parse (a typo in the
// port, a '%' in the password) loses its whole user info instead: what
// cannot be parsed cannot be told apart, and a secret must not reach a log
// because of a typo.
func RedactURL(s string) string {
	if strings.Contains(s, ",") && strings.Count(s, "://") > 1 {
		parts := strings.Split(s, ",")
		for i, p := range parts {
			parts[i] = RedactURL(p)
		}
		return strings.Join(parts, ",")
	}
	if !strings.Contains(s, "://") {
		// No scheme: nats.go prefixes "nats://", so "TOKEN@host:4222" is a
		// token. url.Parse would read it as a path (or fail on the port).
		if at := strings.LastIndex(s, "@"); at >= 0 {
			return redacted + "@" + s[at+1:]
		}
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		i := strings.Index(s, "://")
		scheme, rest := s[:i+3], s[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			return scheme + redacted + "@" + rest[at+1:]
		}
		return s
	}
	if u.User == nil {
		// No user info as url.Parse reads it, but an '@' after the
		// scheme: a token or password holding '#', '?' or '/' ends the
		// authority early ("nats://tok#en@host" parses as host "tok"),
		// yet it is what the operator meant as a secret, and the string
		// is what gets printed. Drop everything before the last '@'.
		i := strings.Index(s, "://")
		if at := strings.LastIndex(s[i+3:], "@"); at >= 0 {
			return s[:i+3] + redacted + "@" + s[i+3+at+1:]
		}
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), redacted)
	} else if natsScheme(u.Scheme) {
		u.User = url.User(redacted)
	}
	return u.String()
}

// redacted replaces a secret in RedactURL's output.
const redacted = "REDACTED"

// natsScheme reports whether scheme (lower case, as url.Parse returns it)
// is one of the schemes nats.go connects with.
func natsScheme(scheme string) bool {
	switch scheme {
	case "nats", "tls", "ws", "wss":
		return true
	}
	return false
}

// RedactURLError returns err with the text of the *url.Error in it (the
// first) reduced to what cannot hold a secret: url.Parse quotes the URL it
// failed on, and parts of it in its message (`invalid port ":pa55" after
// host`), and when a password holds '#' or '?' the URL it quotes is cut
// there, so no redaction of that URL finds the secret. The URL and every
// quoted part are left out ("parse URL: invalid port \"…\" after host"):
// the callers print the whole URL through RedactURL beside it. errors.Is
// and errors.As still see the original.
func RedactURLError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	inner := "invalid URL"
	if ue.Err != nil {
		inner = quotedRE.ReplaceAllString(ue.Err.Error(), `"…"`)
	}
	msg := strings.Replace(err.Error(), ue.Error(), ue.Op+" URL: "+inner, 1)
	return &redactedError{msg: msg, err: err}
}

// quotedRE matches a %q-quoted string in an error message.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// redactedError is an error whose text had a URL redacted; errors.Is and
// errors.As still see the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
