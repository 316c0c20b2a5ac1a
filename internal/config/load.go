package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"sort"
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

// nonFinite reports every float key of dst (a pointer to a configuration
// struct) that holds NaN or an infinity. strconv.ParseFloat reads "NaN" and
// "Inf" from the environment, YAML reads .nan and .inf, and NaN passes any
// range check written as "v <= 0 || v > 1": a NaN cooldown.threshold
// validated and turned the breaker off (found in review, nineteenth
// session). No key of this package means anything by NaN or an infinity.
func nonFinite(dst any) []error {
	var errs []error
	walk(reflect.ValueOf(dst).Elem(), nil, func(path []string, v reflect.Value) {
		if k := v.Kind(); k != reflect.Float64 && k != reflect.Float32 {
			return
		}
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			errs = append(errs, fmt.Errorf("%s %v: want a finite number", strings.Join(path, "."), f))
		}
	})
	return errs
}

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
//     server URL (scheme nats, tls, ws, wss or tcp, or no scheme, which
//     nats.go reads as nats://): nats.go sends it as the CONNECT auth token
//     ("nats://TOKEN@host"), so it is the credential itself (a nats.url
//     may have any other scheme too: RedactNATSURL redacts it whatever the
//     scheme);
//   - a user name without a password in any other URL is kept: in
//     redis:// and rediss:// it is the Redis ACL user name, not a secret,
//     and an operator needs it to tell which user failed.
//
// A NATS URL (a NATS scheme or none) with a comma is a list of seed
// servers, since nats.go splits on every comma, and is redacted server by
// server, a server that may be a piece of a secret the comma cut hidden
// whole (commaCutParts); a comma in another URL (a Redis password may hold
// one, even followed by "://") is left to url.Parse. A URL that does not parse (a typo in the port, a
// '%' in the password) loses its whole user info instead: what cannot be
// parsed cannot be told apart, and a secret must not reach a log because
// of a typo. So does a URL with more than one '@' after its scheme, or one
// '@' outside the user info url.Parse found (a secret holding '@', '#',
// '?' or '/' ends the authority early): everything before the last '@' is
// dropped. The exception is an '@' only in a non-NATS URL's query or
// fragment after a path (redis://host:6379/0?client_name=svc@team): the
// host is kept and the query or fragment hidden.
//
// A query option whose name holds "password" (go-redis's Sentinel form
// takes the primary's password as password=, ParseRedisURL) loses its
// value, and with it whatever follows up to the next option (a password
// holding '&' or '#' goes on there): redactQuerySecrets.
func RedactURL(s string) string {
	// The scheme is the first server's: in "h1:4222,nats://u:p@h2" the
	// first "://" is the second server's (found in review, twenty-fourth
	// session: such a list was read as one URL and its password printed).
	first, _, _ := strings.Cut(s, ",")
	scheme, _, hasScheme := strings.Cut(first, "://")
	if strings.Contains(s, ",") && (!hasScheme || natsScheme(strings.ToLower(scheme))) {
		parts := strings.Split(s, ",")
		cut := commaCutParts(parts)
		for i, p := range parts {
			parts[i] = redactListPart(p, strings.Contains(s, "@"), cut[i])
		}
		return strings.Join(parts, ",")
	}
	return redactQuerySecrets(redactUserInfo(s, hasScheme))
}

// redactUserInfo is RedactURL's redaction of the user info of s, one URL
// (hasScheme: s has a "://").
func redactUserInfo(s string, hasScheme bool) string {
	if !hasScheme {
		// No scheme: nats.go prefixes "nats://", so "TOKEN@host:4222" is a
		// token. url.Parse would read it as a path (or fail on the port).
		if at := strings.LastIndex(s, "@"); at >= 0 {
			return redacted + "@" + s[at+1:]
		}
		return s
	}
	i := strings.Index(s, "://")
	prefix, rest := s[:i+3], s[i+3:]
	dropUserInfo := func() string {
		return prefix + redacted + "@" + rest[strings.LastIndex(rest, "@")+1:]
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		if strings.Contains(rest, "@") {
			return dropUserInfo()
		}
		return s
	case strings.Count(rest, "@") > 1:
		return dropUserInfo() // which '@' ends the user info cannot be told
	case u.User == nil && strings.Contains(rest, "@"):
		// A port right before the '?' or '#' may be a password's start
		// ("redis://app:90210#Zx@host" parses as host app, port 90210):
		// only a host followed by a path ("/0") is read as one.
		portCut := u.Port() != "" && u.Path == ""
		if !natsScheme(u.Scheme) && plainHost(u) && !portCut && !strings.Contains(u.Path, "@") {
			// The '@' is in the query or fragment (a Redis option's value).
			if strings.Contains(u.RawQuery, "@") {
				u.RawQuery = redacted
			}
			if strings.Contains(u.Fragment, "@") || strings.Contains(u.RawFragment, "@") {
				u.Fragment, u.RawFragment = redacted, ""
			}
			return u.String()
		}
		return dropUserInfo()
	case u.User == nil:
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), redacted)
	} else if natsScheme(u.Scheme) {
		u.User = url.User(redacted)
	}
	return u.String()
}

// querySecrets returns where the values of s's secret query options lie,
// as [start, end) pairs: an option whose name (%-decoded, as go-redis reads
// it) holds "password", in any case, after a '?' or '&', its value running
// from its '=' to the next "&<name>=" (a name of letters, digits and '_')
// or to the end, '#' included: a password holding an unescaped '&' or '#'
// is cut there by url.Parse, and its rest must not show as an option name
// or a fragment.
func querySecrets(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); i++ {
		if s[i] != '?' && s[i] != '&' {
			continue
		}
		eq := strings.IndexAny(s[i+1:], "=&#?")
		if eq < 0 || s[i+1+eq] != '=' {
			continue
		}
		name := s[i+1 : i+1+eq]
		if d, err := url.QueryUnescape(name); err == nil {
			name = d
		}
		if !strings.Contains(strings.ToLower(name), "password") {
			continue
		}
		start := i + 1 + eq + 1
		end := len(s)
		if m := nextOptionRE.FindStringIndex(s[start:]); m != nil {
			end = start + m[0]
		}
		out = append(out, [2]int{start, end})
		i = end - 1
	}
	return out
}

// nextOptionRE matches the start of a query option: "&name=".
var nextOptionRE = regexp.MustCompile(`&[A-Za-z0-9_]+=`)

// redactQuerySecrets replaces the values of s's secret query options
// (querySecrets) with REDACTED.
func redactQuerySecrets(s string) string {
	secrets := querySecrets(s)
	for k := len(secrets) - 1; k >= 0; k-- {
		if secrets[k][1] > secrets[k][0] {
			s = s[:secrets[k][0]] + redacted + s[secrets[k][1]:]
		}
	}
	return s
}

// redactQueryError returns err without any piece of raw's secret query
// options' values (querySecrets, split at '&', '#' and '?', as go-redis
// may name one as an unknown option), decoded or not; pieces shorter than
// three characters are left alone, as RedactConnectError leaves them.
func redactQueryError(err error, raw string) error {
	if err == nil {
		return nil
	}
	var pieces []string
	for _, sec := range querySecrets(raw) {
		for _, p := range strings.FieldsFunc(raw[sec[0]:sec[1]], func(r rune) bool { return strings.ContainsRune("&#?", r) }) {
			pieces = append(pieces, p)
			if d, err := url.QueryUnescape(p); err == nil && d != p {
				pieces = append(pieces, d)
			}
		}
	}
	sort.Slice(pieces, func(i, j int) bool { return len(pieces[i]) > len(pieces[j]) })
	msg := err.Error()
	out := msg
	for _, p := range pieces {
		if len(p) >= 3 {
			out = strings.ReplaceAll(out, p, redacted)
		}
	}
	if out == msg {
		return err
	}
	return &redactedError{msg: out, err: err}
}

// plainHost reports whether u's host reads as a host and an optional
// numeric port, not as a user and password that a '#' or '?' cut out of
// the user info ("0:pa55:" of "unix://0:pa55:#@host").
func plainHost(u *url.URL) bool {
	h := u.Host
	if strings.ContainsAny(h, "@") || strings.HasSuffix(h, ":") {
		return false
	}
	if !strings.HasPrefix(h, "[") && strings.Count(h, ":") > 1 {
		return false
	}
	for _, c := range u.Port() {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// redactListPart redacts one server of a comma-separated list. A part
// that may be the start or a middle of a secret the comma cut loses its
// authority: one commaCutParts marked (commaCut), and, in a list with user
// info somewhere, one that does not parse and has no '@' ("nats://:pa" of
// "nats://:pa,ss@host").
func redactListPart(p string, listHasUserInfo, commaCut bool) string {
	check := p
	if !strings.Contains(p, "://") {
		check = "nats://" + p
	}
	if commaCut {
		return hideListPart(p)
	}
	if _, err := url.Parse(check); err != nil && !strings.Contains(p, "@") && listHasUserInfo {
		return hideListPart(p)
	}
	return RedactURL(p)
}

// redacted replaces a secret in RedactURL's output.
const redacted = "REDACTED"

// natsScheme reports whether scheme (lower case, as url.Parse returns it)
// is one of the schemes nats.go connects with and no other client reads:
// nats, tls, ws, wss and tcp (nats.go dials any scheme but tls, ws and
// wss as plain TCP, and docker-style configurations write tcp://; found in
// review, twenty-second session: a token in a tcp:// nats.url was logged).
func natsScheme(scheme string) bool {
	switch scheme {
	case "nats", "tls", "ws", "wss", "tcp":
		return true
	}
	return false
}

// RedactNATSURL is RedactURL for a nats.url (a server URL or a
// comma-separated list of them), read as nats.go reads it: split at every
// comma, and a user name without a password in any server's URL is the
// CONNECT auth token whatever the scheme (nats.go sends it for every scheme
// CheckNATSURL accepts, "foo://TOKEN@host" included), so it is replaced.
// Use it, not RedactURL, for every nats.url.
func RedactNATSURL(s string) string {
	parts := strings.Split(s, ",")
	hasAt := strings.Contains(s, "@")
	cut := commaCutParts(parts)
	for i, p := range parts {
		scheme, rest, ok := strings.Cut(p, "://")
		if !ok || natsScheme(strings.ToLower(scheme)) {
			parts[i] = redactListPart(p, hasAt, cut[i])
			continue
		}
		// Redacted as a nats:// URL, then given its own scheme back.
		parts[i] = scheme + "://" + strings.TrimPrefix(redactListPart("nats://"+rest, hasAt, cut[i]), "nats://")
	}
	return strings.Join(parts, ",")
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

// RedactConnectError is RedactURLError for the error of connecting to raw
// (a NATS or Redis URL from the configuration), also removing every piece
// of raw's user info from the text: a client may quote such a piece on
// its own, as nats.go does when a token holding '/' makes it dial the
// token's start as a host ("lookup s3cr3t on ...: no such host").
// Pieces shorter than three characters are left alone.
func RedactConnectError(err error, raw string) error {
	if err == nil {
		return nil
	}
	err = RedactURLError(err)
	msg := err.Error()
	out := msg
	for _, piece := range userInfoPieces(raw) {
		out = strings.ReplaceAll(out, piece, redacted)
	}
	if out == msg {
		return err
	}
	return &redactedError{msg: out, err: err}
}

// userInfoPieces returns the parts of every user info in raw (each server
// of a comma-separated list: what lies between its "://" and its last
// '@', or all after its "://" when it may be a piece of a secret the comma
// cut, commaCutParts), split at ':', '/', '#', '?' and '@', longest first.
func userInfoPieces(raw string) []string {
	var out []string
	parts := strings.Split(raw, ",")
	cut := commaCutParts(parts)
	ports := listPorts(parts, cut)
	for i, part := range parts {
		at := strings.LastIndex(part, "@")
		if cut[i] {
			at = len(part)
		}
		if at < 0 {
			continue
		}
		info := part[:at]
		if i := strings.Index(info, "://"); i >= 0 {
			info = info[i+3:]
		}
		if cut[i] && strings.Contains(part, "://") {
			// Of a comma-cut password's first piece ("admin:2024" of
			// "nats://admin:2024,Winter@host") what is secret follows the
			// user name's ':': the start is a user name, or a real
			// server's host an operator needs to read in the error (found
			// in review, twenty-fourth session). Without a ':' it is a
			// token's start, secret whole; later pieces are secret whole.
			if _, after, ok := strings.Cut(info, ":"); ok {
				info = after
			}
		}
		for _, p := range strings.FieldsFunc(info, func(r rune) bool { return strings.ContainsRune(":/#?@", r) }) {
			p = strings.TrimSpace(p)
			if len(p) < 3 || (cut[i] && ports[p]) {
				continue // a real server's port is no secret of a cut piece
			}
			out = append(out, p)
			// A client may print the piece decoded (url.Parse decodes a
			// host's %-escapes): "%C3%A9t%C3%A9" is dialled as "été".
			if d, err := url.PathUnescape(p); err == nil && d != p && len(d) >= 3 {
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// listPorts returns the ports of the list's parts that are servers for
// sure (not commaCutParts).
func listPorts(parts []string, cut []bool) map[string]bool {
	ports := map[string]bool{}
	for i, p := range parts {
		if cut[i] {
			continue
		}
		if j := strings.LastIndex(p, "@"); j >= 0 {
			p = p[j+1:]
		} else if j := strings.Index(p, "://"); j >= 0 {
			p = p[j+3:]
		}
		if j := strings.IndexAny(p, "/?#"); j >= 0 {
			p = p[:j]
		}
		if j := strings.LastIndex(p, ":"); j >= 0 && !strings.HasSuffix(p, "]") {
			ports[p[j+1:]] = true
		}
	}
	return ports
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
