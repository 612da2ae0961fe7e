package pgstore

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// positionRow is a pgx.CollectableRow whose Scan stores in each
// destination a value that names its position.
type positionRow struct{}

func (positionRow) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (positionRow) Values() ([]any, error)                       { return nil, nil }
func (positionRow) RawValues() [][]byte                          { return nil }
func (positionRow) Scan(dest ...any) error {
	for i, d := range dest {
		switch d := d.(type) {
		case *string:
			*d = fmt.Sprint(i)
		case *[]string:
			*d = []string{fmt.Sprint(i)}
		case *int64:
			*d = int64(i)
		default:
			return fmt.Errorf("destination %d: %T", i, d)
		}
	}
	return nil
}

// TestGovColumnsOrder: govRowByPos scans a row by position, so the
// statements it scans must return govColumns, and it must put each
// column of govColumns in the field of govRow named after that column.
func TestGovColumnsOrder(t *testing.T) {
	var cols []string
	for _, c := range strings.Split(govColumns, ",") {
		cols = append(cols, strings.TrimSpace(c))
	}
	r, err := govRowByPos(positionRow{})
	if err != nil {
		t.Fatal(err)
	}
	v, typ := reflect.ValueOf(r), reflect.TypeOf(r)
	if typ.NumField() != len(cols) {
		t.Fatalf("govRow has %d fields, govColumns %d columns", typ.NumField(), len(cols))
	}
	for i := range typ.NumField() {
		tag := typ.Field(i).Tag.Get("db")
		var pos string
		switch f := v.Field(i).Interface().(type) {
		case string:
			pos = f
		case []string:
			pos = f[0]
		case int64:
			pos = fmt.Sprint(f)
		}
		if want := fmt.Sprint(slices.Index(cols, tag)); pos != want {
			t.Errorf("field %s (column %q) scanned from position %s; govColumns has it at %s", typ.Field(i).Name, tag, pos, want)
		}
	}
	for name, sql := range map[string]string{"govUseSQL": govUseSQL, "govUseAuditedSQL": govUseAuditedSQL, "govUseManySQL": govUseManySQL} {
		if !strings.HasSuffix(strings.TrimSpace(sql), "RETURNING "+govColumns) && !strings.HasSuffix(strings.TrimSpace(sql), "SELECT "+govColumns+" FROM u") {
			t.Errorf("%s does not return govColumns", name)
		}
	}
}
