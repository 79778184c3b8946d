package main

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Every key of the configuration file can be set from the environment, in
// a variable named after its path: `limits.maxBodyBytes` is
// VITRINE_LIMITS_MAX_BODY_BYTES. Strings, numbers, booleans and durations
// are written as in the file; a list of strings is comma-separated (or a
// JSON list, for items holding commas); maps and lists of objects are a
// JSON value (`VITRINE_ACCESS_CONTROL_GROUPS='{"uploader":["images.post"]}'`).

// configKey is one settable key of the configuration: a leaf of the file's
// tree (a scalar, a list or a map; sections are walked into).
type configKey struct {
	path  []string      // yaml names from the root: ["limits", "maxBodyBytes"]
	value reflect.Value // the field, settable
	field reflect.StructField
}

// Path is the key as the file writes it: limits.maxBodyBytes.
func (k configKey) Path() string { return strings.Join(k.path, ".") }

// Env is the key's environment variable: VITRINE_LIMITS_MAX_BODY_BYTES.
func (k configKey) Env() string {
	parts := []string{"VITRINE"}
	for _, p := range k.path {
		parts = append(parts, envName(p))
	}
	return strings.Join(parts, "_")
}

// configKeys lists every key of cfg (a pointer to a struct) in file order.
func configKeys(cfg any) []configKey {
	var keys []configKey
	walkKeys(reflect.ValueOf(cfg).Elem(), nil, &keys)
	return keys
}

var durationType = reflect.TypeFor[time.Duration]()

func walkKeys(v reflect.Value, path []string, keys *[]configKey) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		fv := v.Field(i)
		if opts == "inline" {
			walkKeys(fv, path, keys)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // yaml's default
		}
		p := append(append([]string(nil), path...), name)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			walkKeys(fv, p, keys)
			continue
		}
		*keys = append(*keys, configKey{path: p, value: fv, field: f})
	}
}

// envName turns a yaml key into its environment form: maxBodyBytes →
// MAX_BODY_BYTES.
func envName(key string) string {
	var b strings.Builder
	for i, r := range key {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// applyEnv sets every key of cfg whose variable lookup finds.
func applyEnv(cfg any, lookup func(string) (string, bool)) error {
	for _, k := range configKeys(cfg) {
		raw, ok := lookup(k.Env())
		if !ok {
			continue
		}
		if err := setFromString(k.value, raw); err != nil {
			return fmt.Errorf("%s (%s): %w", k.Env(), k.Path(), err)
		}
	}
	return nil
}

// setFromString sets fv from an environment value.
func setFromString(fv reflect.Value, raw string) error {
	if fv.Type() == durationType {
		d, err := time.ParseDuration(raw)
		if err != nil {
			return err
		}
		fv.SetInt(int64(d))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		fv.SetBool(b)
	case reflect.Pointer:
		if fv.Type().Elem().Kind() != reflect.Bool {
			return setFromJSON(fv, raw)
		}
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		fv.Set(reflect.ValueOf(&b))
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String || strings.HasPrefix(strings.TrimSpace(raw), "[") {
			return setFromJSON(fv, raw)
		}
		fv.Set(reflect.ValueOf(splitList(raw)).Convert(fv.Type()))
	default:
		return setFromJSON(fv, raw)
	}
	return nil
}

// setFromJSON decodes a JSON value into fv the way the file's YAML would
// be (JSON is YAML's flow style), with the same key names and checks.
func setFromJSON(fv reflect.Value, raw string) error {
	dec := yaml.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.KnownFields(true)
	p := reflect.New(fv.Type())
	if err := dec.Decode(p.Interface()); err != nil {
		return fmt.Errorf("want a JSON value: %w", err)
	}
	fv.Set(p.Elem())
	return nil
}
