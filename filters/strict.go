package filters

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// checkKeys walks the manifest's JSON objects and refuses any key that
// does not name a field of the struct it decodes into exactly. Why:
// encoding/json matches field names case-insensitively, and the ABI wants
// a typo such as "memoryMb" to be an error, not a silent default.
func checkKeys(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
			return nil // the decoder reports type errors
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		for k, v := range obj {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("unknown field %q", strings.TrimPrefix(path+"."+k, "."))
			}
			if err := checkKeys(v, ft, path+"."+k); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil
		}
		for k, v := range obj {
			if err := checkKeys(v, t.Elem(), path+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields adds the JSON names of struct t's fields to fields, those of
// an embedded struct without a name of its own as encoding/json does
// (Param embeds schema.Param).
func jsonFields(t reflect.Type, fields map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			jsonFields(f.Type, fields)
		case name != "" && name != "-":
			fields[name] = f.Type
		}
	}
}
