package database

import (
	"database/sql"
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"
	_ "modernc.org/sqlite" // the pure Go SQLite driver, registered as "sqlite"
)

// sqliteDialector is gorm's dialect for modernc.org/sqlite, the pure Go SQLite
// driver. The host keeps its own small dialect rather than the common
// glebarez one because that one pins a fork of the driver that parses every
// statement again on each execution, which dominated the cost of a storage
// write; modernc.org/sqlite keeps prepared statements.
type sqliteDialector struct {
	dsn string
}

func (sqliteDialector) Name() string { return SQLite }

func (d sqliteDialector) Initialize(db *gorm.DB) error {
	callbacks.RegisterDefaultCallbacks(db, &callbacks.Config{
		CreateClauses:        []string{"INSERT", "VALUES", "ON CONFLICT", "RETURNING"},
		UpdateClauses:        []string{"UPDATE", "SET", "FROM", "WHERE", "RETURNING"},
		DeleteClauses:        []string{"DELETE", "FROM", "WHERE", "RETURNING"},
		LastInsertIDReversed: true,
	})
	conn, err := sql.Open("sqlite", d.dsn)
	if err != nil {
		return err
	}
	db.ConnPool = conn
	// SQLite has a single writer and no row locks: FOR UPDATE is dropped.
	db.ClauseBuilders["FOR"] = func(c clause.Clause, b clause.Builder) {
		if _, ok := c.Expression.(clause.Locking); ok {
			return
		}
		c.Build(b)
	}
	return nil
}

func (d sqliteDialector) Migrator(db *gorm.DB) gorm.Migrator {
	return sqliteMigrator{migrator.Migrator{Config: migrator.Config{DB: db, Dialector: d, CreateIndexAfterCreateTable: true}}}
}

// DataTypeOf maps gorm's generic types to SQLite's; an explicit type tag
// (varchar(40), mediumtext, ...) is used as written, which SQLite's type
// affinity rules understand.
func (sqliteDialector) DataTypeOf(f *schema.Field) string {
	switch f.DataType {
	case schema.Bool:
		return "numeric"
	case schema.Int, schema.Uint:
		return "integer"
	case schema.Float:
		return "real"
	case schema.String:
		return "text"
	case schema.Time:
		return "datetime"
	case schema.Bytes:
		return "blob"
	}
	return string(f.DataType)
}

func (sqliteDialector) DefaultValueOf(*schema.Field) clause.Expression {
	return clause.Expr{SQL: "DEFAULT"}
}

func (sqliteDialector) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) { w.WriteByte('?') }

// QuoteTo quotes each part of a dotted name with backticks.
func (sqliteDialector) QuoteTo(w clause.Writer, s string) {
	for i, part := range strings.Split(s, ".") {
		if i > 0 {
			w.WriteByte('.')
		}
		w.WriteByte('`')
		w.WriteString(strings.ReplaceAll(part, "`", "``"))
		w.WriteByte('`')
	}
}

func (sqliteDialector) Explain(sql string, vars ...any) string {
	return logger.ExplainSQL(sql, nil, `"`, vars...)
}

// sqliteMigrator answers the schema questions gorm's generic migrator cannot.
type sqliteMigrator struct{ migrator.Migrator }

func (m sqliteMigrator) CurrentDatabase() string { return "main" }

func (m sqliteMigrator) HasTable(value any) bool {
	var n int64
	m.RunWithValue(value, func(stmt *gorm.Statement) error {
		return m.DB.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", stmt.Table).Row().Scan(&n)
	})
	return n > 0
}

func (m sqliteMigrator) HasIndex(value any, name string) bool {
	var n int64
	m.RunWithValue(value, func(stmt *gorm.Statement) error {
		if stmt.Schema != nil {
			if idx := stmt.Schema.LookIndex(name); idx != nil {
				name = idx.Name
			}
		}
		return m.DB.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?", stmt.Table, name).Row().Scan(&n)
	})
	return n > 0
}

func (m sqliteMigrator) HasColumn(value any, name string) bool {
	var n int64
	m.RunWithValue(value, func(stmt *gorm.Statement) error {
		if stmt.Schema != nil {
			if f := stmt.Schema.LookUpField(name); f != nil {
				name = f.DBName
			}
		}
		return m.DB.Raw(fmt.Sprintf("SELECT count(*) FROM pragma_table_info(%s) WHERE name = ?", quoteLiteral(stmt.Table)), name).Row().Scan(&n)
	})
	return n > 0
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
