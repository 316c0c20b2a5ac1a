package opsconfig

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Selector is one vector selector of an expression: a metric name and its
// label matchers.
type Selector struct {
	// Name is the metric name (from the identifier or a __name__="..."
	// matcher).
	Name string
	// Matchers are the selector's label matchers, in order.
	Matchers []Matcher
	// Calls are the functions and aggregations the selector is an
	// argument of, innermost first: ["rate", "sum"] for
	// sum(rate(x[5m])). Grouping parentheses are not calls.
	Calls []string
}

// Matcher is one label matcher of a selector.
type Matcher struct {
	// Label is the label name.
	Label string
	// Op is one of =, !=, =~, !~.
	Op string
	// Value is the unquoted matcher value.
	Value string
}

// Expr is what ParseExpr learned about a PromQL expression.
type Expr struct {
	// Selectors are the expression's vector selectors, in order.
	Selectors []Selector
	// GroupingLabels are the label names used in by, without, on, ignoring,
	// group_left and group_right clauses.
	GroupingLabels []string
	// Functions are the functions and aggregations called.
	Functions []string
}

// Metrics returns the distinct metric names of e, in order of appearance.
func (e *Expr) Metrics() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range e.Selectors {
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
	}
	return out
}

// aggregations are PromQL's aggregation operators.
var aggregations = setOf("sum", "avg", "count", "min", "max", "group", "stddev", "stdvar",
	"topk", "bottomk", "quantile", "count_values", "limitk", "limit_ratio")

// functions are PromQL's functions (Prometheus 3.x).
var functions = setOf("abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
	"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time",
	"day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv",
	"double_exponential_smoothing", "exp", "floor", "histogram_avg", "histogram_count", "histogram_fraction",
	"histogram_quantile", "histogram_stddev", "histogram_stdvar", "histogram_sum", "holt_winters", "hour",
	"idelta", "increase", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
	"mad_over_time", "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
	"present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin", "sinh",
	"sort", "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time",
	"sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year")

var binaryKeywords = setOf("and", "or", "unless", "atan2")

var binaryOps = setOf("+", "-", "*", "/", "%", "^", "==", "!=", "<", ">", "<=", ">=")

var matchOps = setOf("=", "!=", "=~", "!~")

func setOf(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

type tokKind int

const (
	tIdent tokKind = iota
	tNumber
	tDuration
	tString
	tOp
	tPunct
)

type token struct {
	kind tokKind
	text string // for tString, the unquoted value
	pos  int
}

var durationRE = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+`)

func lex(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			var b strings.Builder
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && c != '`' {
					j++
					if j >= len(s) {
						break
					}
				}
				if s[j] == '\n' && c != '`' {
					return nil, fmt.Errorf("offset %d: newline in string", j)
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("offset %d: unterminated string", i)
			}
			toks = append(toks, token{tString, b.String(), i})
			i = j + 1
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			if d := durationRE.FindString(s[i:]); d != "" && !(i+len(d) < len(s) && isIdentChar(s[i+len(d)])) {
				toks = append(toks, token{tDuration, d, i})
				i += len(d)
				continue
			}
			j := i
			if strings.HasPrefix(s[i:], "0x") || strings.HasPrefix(s[i:], "0X") {
				j += 2
				for j < len(s) && strings.ContainsRune("0123456789abcdefABCDEF", rune(s[j])) {
					j++
				}
			} else {
				for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
					j++
				}
				if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
					j++
					if j < len(s) && (s[j] == '+' || s[j] == '-') {
						j++
					}
					k := j
					for j < len(s) && s[j] >= '0' && s[j] <= '9' {
						j++
					}
					if k == j {
						return nil, fmt.Errorf("offset %d: bad number exponent", i)
					}
				}
			}
			if j < len(s) && isIdentChar(s[j]) {
				return nil, fmt.Errorf("offset %d: bad number or duration %q", i, s[i:j+1])
			}
			if strings.Count(s[i:j], ".") > 1 {
				return nil, fmt.Errorf("offset %d: bad number %q", i, s[i:j])
			}
			toks = append(toks, token{tNumber, s[i:j], i})
			i = j
		case c == '_' || c < unicode.MaxASCII && unicode.IsLetter(rune(c)):
			j := i
			for j < len(s) && (isIdentChar(s[j]) || s[j] == ':') {
				j++
			}
			toks = append(toks, token{tIdent, s[i:j], i})
			i = j
		default:
			if i+1 < len(s) {
				if two := s[i : i+2]; two == "==" || two == "!=" || two == "<=" || two == ">=" || two == "=~" || two == "!~" {
					toks = append(toks, token{tOp, two, i})
					i += 2
					continue
				}
			}
			switch c {
			case '+', '-', '*', '/', '%', '^', '<', '>', '=', '@':
				toks = append(toks, token{tOp, string(c), i})
			case '(', ')', '{', '}', '[', ']', ',', ':':
				toks = append(toks, token{tPunct, string(c), i})
			default:
				return nil, fmt.Errorf("offset %d: unexpected character %q", i, c)
			}
			i++
		}
	}
	return toks, nil
}

func isIdentChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// parser is a strict structural checker of PromQL: it tracks whether an
// operand or an operator is expected, the nesting of parentheses, and the
// inner grammar of label matchers, label lists, ranges and subqueries. It
// does not type-check (e.g. rate of an instant vector), which the real
// parser would.
type parser struct {
	toks []token
	i    int
	expr Expr
}

func (p *parser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

func (p *parser) next() (token, bool) {
	t, ok := p.peek()
	if ok {
		p.i++
	}
	return t, ok
}

func (p *parser) errf(format string, args ...any) error {
	pos := -1
	if p.i < len(p.toks) {
		pos = p.toks[p.i].pos
	} else if len(p.toks) > 0 {
		pos = p.toks[len(p.toks)-1].pos
	}
	return fmt.Errorf("offset %d: %s", pos, fmt.Sprintf(format, args...))
}

func (p *parser) expectPunct(s string) error {
	t, ok := p.next()
	if !ok || t.kind != tPunct || t.text != s {
		p.i--
		return p.errf("expected %q", s)
	}
	return nil
}

func (p *parser) isPunct(s string) bool {
	t, ok := p.peek()
	return ok && t.kind == tPunct && t.text == s
}

// labelList parses "( name, name, ... )" (possibly empty, trailing comma
// allowed).
func (p *parser) labelList() error {
	if err := p.expectPunct("("); err != nil {
		return err
	}
	for {
		if p.isPunct(")") {
			p.i++
			return nil
		}
		t, ok := p.next()
		if !ok || t.kind != tIdent || !labelNameRE.MatchString(t.text) {
			p.i--
			return p.errf("expected a label name")
		}
		p.expr.GroupingLabels = append(p.expr.GroupingLabels, t.text)
		if p.isPunct(",") {
			p.i++
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return err
		}
		return nil
	}
}

// matchers parses "{ label op "value", ... }" into sel.
func (p *parser) matchers(sel *Selector) error {
	if err := p.expectPunct("{"); err != nil {
		return err
	}
	for {
		if p.isPunct("}") {
			p.i++
			return nil
		}
		name, ok := p.next()
		if !ok || name.kind != tIdent || !labelNameRE.MatchString(name.text) {
			p.i--
			return p.errf("expected a label name in matcher")
		}
		op, ok := p.next()
		if !ok || op.kind != tOp || !matchOps[op.text] {
			p.i--
			return p.errf("expected =, !=, =~ or !~ after %q", name.text)
		}
		val, ok := p.next()
		if !ok || val.kind != tString {
			p.i--
			return p.errf("expected a string after %s%s", name.text, op.text)
		}
		if op.text == "=~" || op.text == "!~" {
			if _, err := regexp.Compile("^(?:" + val.text + ")$"); err != nil {
				return p.errf("bad regexp %q: %v", val.text, err)
			}
		}
		if name.text == "__name__" && op.text == "=" {
			sel.Name = val.text
		} else {
			sel.Matchers = append(sel.Matchers, Matcher{Label: name.text, Op: op.text, Value: val.text})
		}
		if p.isPunct(",") {
			p.i++
			continue
		}
		return p.expectPunct("}")
	}
}

// rangeOrSubquery parses "[d]" or "[d:]" or "[d:d]".
func (p *parser) rangeOrSubquery() error {
	if err := p.expectPunct("["); err != nil {
		return err
	}
	if t, ok := p.next(); !ok || t.kind != tDuration {
		p.i--
		return p.errf("expected a duration in range")
	}
	if p.isPunct(":") {
		p.i++
		if t, ok := p.peek(); ok && t.kind == tDuration {
			p.i++
		}
	}
	return p.expectPunct("]")
}

type frame struct {
	call string // function or aggregation name; "" for grouping parentheses
}

// enclosingCalls returns the calls of stack, innermost first, or nil.
func enclosingCalls(stack []frame) []string {
	var out []string
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i].call != "" {
			out = append(out, stack[i].call)
		}
	}
	return out
}

func (p *parser) parse() error {
	var stack []frame
	expectOperand := true
	lastClosedAgg := false // the token before was the ")" closing an aggregation
	for {
		t, ok := p.next()
		if !ok {
			break
		}
		closedAgg := false
		switch t.kind {
		case tIdent:
			low := strings.ToLower(t.text)
			switch {
			case low == "by" || low == "without":
				// Postfix form: sum(...) by (x).
				if !lastClosedAgg {
					return p.errf("%q only follows an aggregation", t.text)
				}
				if err := p.labelList(); err != nil {
					return err
				}
				expectOperand = false
			case low == "on" || low == "ignoring" || low == "group_left" || low == "group_right":
				return p.errf("%q outside a binary operation", t.text)
			case binaryKeywords[low]:
				if expectOperand {
					return p.errf("operator %q without a left operand", t.text)
				}
				if err := p.binaryModifiers(); err != nil {
					return err
				}
				expectOperand = true
			case low == "offset":
				if expectOperand {
					return p.errf("offset without a selector")
				}
				if tok, ok := p.peek(); ok && tok.kind == tOp && tok.text == "-" {
					p.i++
				}
				if tok, ok := p.next(); !ok || tok.kind != tDuration {
					p.i--
					return p.errf("expected a duration after offset")
				}
			case low == "bool":
				return p.errf("bool outside a comparison")
			case low == "inf" || low == "nan":
				if !expectOperand {
					return p.errf("unexpected number %q", t.text)
				}
				expectOperand = false
			case aggregations[t.text] || functions[t.text]:
				if !expectOperand {
					return p.errf("unexpected call of %q", t.text)
				}
				p.expr.Functions = append(p.expr.Functions, t.text)
				if aggregations[t.text] {
					if nt, ok := p.peek(); ok && nt.kind == tIdent && (nt.text == "by" || nt.text == "without") {
						p.i++
						if err := p.labelList(); err != nil {
							return err
						}
					}
				}
				if err := p.expectPunct("("); err != nil {
					return err
				}
				stack = append(stack, frame{call: t.text})
				expectOperand = true
			default:
				if nt, ok := p.peek(); ok && nt.kind == tPunct && nt.text == "(" {
					return p.errf("unknown function %q", t.text)
				}
				if !expectOperand {
					return p.errf("unexpected identifier %q (missing operator?)", t.text)
				}
				sel := Selector{Name: t.text}
				if p.isPunct("{") {
					if err := p.matchers(&sel); err != nil {
						return err
					}
				}
				sel.Calls = enclosingCalls(stack)
				p.expr.Selectors = append(p.expr.Selectors, sel)
				expectOperand = false
			}
		case tNumber, tString:
			if !expectOperand {
				return p.errf("unexpected literal %q (missing operator?)", t.text)
			}
			expectOperand = false
		case tDuration:
			return p.errf("duration %q outside a range, subquery or offset", t.text)
		case tOp:
			switch {
			case t.text == "@":
				if expectOperand {
					return p.errf("@ without a selector")
				}
				nt, ok := p.next()
				switch {
				case ok && nt.kind == tNumber:
				case ok && nt.kind == tIdent && (nt.text == "start" || nt.text == "end"):
					if err := p.expectPunct("("); err != nil {
						return err
					}
					if err := p.expectPunct(")"); err != nil {
						return err
					}
				default:
					p.i--
					return p.errf("expected a timestamp, start() or end() after @")
				}
			case expectOperand && (t.text == "-" || t.text == "+"):
				// unary sign
			case binaryOps[t.text]:
				if expectOperand {
					return p.errf("operator %q without a left operand", t.text)
				}
				if err := p.binaryModifiers(); err != nil {
					return err
				}
				expectOperand = true
			default:
				return p.errf("unexpected %q", t.text)
			}
		case tPunct:
			switch t.text {
			case "(":
				if !expectOperand {
					return p.errf("unexpected \"(\" (missing operator?)")
				}
				stack = append(stack, frame{})
			case ")":
				if len(stack) == 0 {
					return p.errf("unbalanced \")\"")
				}
				top := stack[len(stack)-1]
				emptyCall := top.call != "" && p.toks[p.i-2].kind == tPunct && p.toks[p.i-2].text == "("
				if expectOperand && !emptyCall {
					return p.errf("missing operand before \")\"")
				}
				stack = stack[:len(stack)-1]
				closedAgg = aggregations[top.call]
				expectOperand = false
			case ",":
				if len(stack) == 0 || stack[len(stack)-1].call == "" {
					return p.errf("\",\" outside a call")
				}
				if expectOperand {
					return p.errf("missing argument before \",\"")
				}
				expectOperand = true
			case "{":
				if !expectOperand {
					return p.errf("unexpected \"{\"")
				}
				p.i--
				var sel Selector
				if err := p.matchers(&sel); err != nil {
					return err
				}
				if sel.Name == "" {
					return p.errf("selector without a metric name")
				}
				sel.Calls = enclosingCalls(stack)
				p.expr.Selectors = append(p.expr.Selectors, sel)
				expectOperand = false
			case "[":
				if expectOperand {
					return p.errf("range without a selector")
				}
				p.i--
				if err := p.rangeOrSubquery(); err != nil {
					return err
				}
			default:
				return p.errf("unexpected %q", t.text)
			}
		}
		lastClosedAgg = closedAgg
	}
	if len(stack) > 0 {
		return p.errf("unclosed \"(\"")
	}
	if expectOperand {
		return p.errf("expression ends where an operand is expected")
	}
	return nil
}

// binaryModifiers parses what may follow a binary operator: bool, then
// on/ignoring (labels), then group_left/group_right [(labels)].
func (p *parser) binaryModifiers() error {
	if t, ok := p.peek(); ok && t.kind == tIdent && t.text == "bool" {
		p.i++
	}
	if t, ok := p.peek(); ok && t.kind == tIdent && (t.text == "on" || t.text == "ignoring") {
		p.i++
		if err := p.labelList(); err != nil {
			return err
		}
		if t, ok := p.peek(); ok && t.kind == tIdent && (t.text == "group_left" || t.text == "group_right") {
			p.i++
			if p.isPunct("(") {
				if err := p.labelList(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ParseExpr checks the structure of a PromQL expression and returns its
// selectors, grouping labels and calls. Grafana variables must be expanded
// first (ExpandGrafanaVars).
func ParseExpr(s string) (*Expr, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return &p.expr, nil
}

// grafanaIntervals are Grafana's built-in interval variables, replaced by a
// representative duration so the expression parses as PromQL.
var grafanaIntervals = strings.NewReplacer(
	"${__rate_interval}", "5m", "$__rate_interval", "5m",
	"${__interval}", "1m", "$__interval", "1m",
	"${__range}", "6h", "$__range", "6h",
)

// ExpandGrafanaVars replaces Grafana's interval variables ($__rate_interval,
// $__interval, $__range) with durations. Dashboard variables ($model) are
// left alone: they may only appear inside matcher strings, which the lexer
// treats as opaque; anywhere else ParseExpr rejects the "$".
func ExpandGrafanaVars(s string) string {
	return grafanaIntervals.Replace(s)
}
