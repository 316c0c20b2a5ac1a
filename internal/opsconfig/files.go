package opsconfig

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Dashboard is the part of a Grafana dashboard JSON model the checks read.
// Unknown fields are ignored (Grafana's model is large).
type Dashboard struct {
	// UID is the dashboard's stable id.
	UID string `json:"uid"`
	// Title is the dashboard title.
	Title string `json:"title"`
	// SchemaVersion is Grafana's dashboard schema version.
	SchemaVersion int `json:"schemaVersion"`
	// Panels are the top-level panels (rows included).
	Panels []Panel `json:"panels"`
	// Templating holds the dashboard variables.
	Templating struct {
		// List is the variables.
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is one dashboard panel.
type Panel struct {
	// ID is unique within the dashboard.
	ID int `json:"id"`
	// Type is the panel plugin (timeseries, stat, row, ...).
	Type string `json:"type"`
	// Title is the panel title.
	Title string `json:"title"`
	// Description is the panel's help text.
	Description string `json:"description"`
	// Datasource is the panel's data source reference.
	Datasource *DatasourceRef `json:"datasource"`
	// GridPos is the panel's position.
	GridPos *struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
	// Targets are the panel's queries.
	Targets []Target `json:"targets"`
	// FieldConfig holds the defaults (unit, thresholds).
	FieldConfig struct {
		// Defaults are the field defaults.
		Defaults struct {
			// Thresholds colour the value.
			Thresholds *struct {
				// Mode is absolute or percentage.
				Mode string `json:"mode"`
				// Steps are the threshold steps; the first has a null value.
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	// Panels are the children of a collapsed row.
	Panels []Panel `json:"panels"`
}

// DatasourceRef references a data source, here always the dashboard's
// Prometheus variable.
type DatasourceRef struct {
	// Type is the data source type.
	Type string `json:"type"`
	// UID is the data source uid or a variable reference.
	UID string `json:"uid"`
}

// Target is one panel query.
type Target struct {
	// RefID is unique within the panel.
	RefID string `json:"refId"`
	// Expr is the PromQL expression.
	Expr string `json:"expr"`
	// Datasource is the query's data source.
	Datasource *DatasourceRef `json:"datasource"`
}

// Variable is one dashboard variable.
type Variable struct {
	// Name is the variable name ($name in queries).
	Name string `json:"name"`
	// Type is datasource, query, custom, ...
	Type string `json:"type"`
	// Query is the data source type for a datasource variable, or the
	// variable's query (a string or an object) for a query variable.
	Query json.RawMessage `json:"query"`
	// Definition is the human-readable query of a query variable.
	Definition string `json:"definition"`
}

// AllPanels returns the panels with the children of collapsed rows.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// LoadDashboard reads and decodes a dashboard JSON file. Trailing data
// after the object is an error.
func LoadDashboard(path string) (*Dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var d Dashboard
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the dashboard object", path)
	}
	return &d, nil
}

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	// Groups are the rule groups.
	Groups []RuleGroup `yaml:"groups"`
}

// RuleGroup is one rule group.
type RuleGroup struct {
	// Name is unique within the file.
	Name string `yaml:"name"`
	// Interval overrides the global evaluation interval.
	Interval string `yaml:"interval,omitempty"`
	// Limit caps the alerts or series a rule may produce.
	Limit int `yaml:"limit,omitempty"`
	// Rules are the group's rules.
	Rules []Rule `yaml:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	// Alert is the alert name (alerting rules).
	Alert string `yaml:"alert,omitempty"`
	// Record is the series name (recording rules).
	Record string `yaml:"record,omitempty"`
	// Expr is the PromQL expression.
	Expr string `yaml:"expr"`
	// For is how long the condition must hold before the alert fires.
	For string `yaml:"for,omitempty"`
	// KeepFiringFor keeps a resolved alert firing for this long.
	KeepFiringFor string `yaml:"keep_firing_for,omitempty"`
	// Labels are added to the alert.
	Labels map[string]string `yaml:"labels,omitempty"`
	// Annotations are the alert's texts (summary, description,
	// runbook_url).
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// LoadRules reads and strictly decodes a rule file: unknown fields are
// errors, as they are for Prometheus.
func LoadRules(path string) (*RuleFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f RuleFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// promDurationRE is Prometheus' duration syntax (model.ParseDuration).
var promDurationRE = regexp.MustCompile(`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`)

// ValidDuration reports whether s is a non-empty Prometheus duration.
func ValidDuration(s string) bool {
	return s != "" && promDurationRE.MatchString(s)
}

var (
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	explicitRE = regexp.MustCompile(`(?:id|name)="([^"]+)"|\{#([A-Za-z0-9_-]+)\}`)
	slugDropRE = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// Slug is GitHub's anchor for a Markdown heading: lower case, punctuation
// other than "-" and "_" dropped, spaces turned into "-".
func Slug(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = slugDropRE.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// MarkdownAnchors returns the anchors of a Markdown file: heading slugs
// (with GitHub's -1, -2 suffixes for repeats) and explicit id="..." or
// {#...} anchors. Headings inside fenced code blocks are skipped.
func MarkdownAnchors(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	count := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range explicitRE.FindAllStringSubmatch(line, -1) {
			out[m[1]+m[2]] = true
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			slug := Slug(m[1])
			if n := count[slug]; n > 0 {
				out[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				out[slug] = true
			}
			count[slug]++
		}
	}
	return out, sc.Err()
}
