package cli

import (
	"context"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"pluginhost/auth"
	"pluginhost/database"
	"pluginhost/migrations"
	"pluginhost/models"
)

// DBFlag defines --db, the database every command that opens one takes.
func DBFlag(fs *FlagSet) *string {
	return fs.String("db", "PLUGINHOST_DB", database.DefaultDSN,
		"database: sqlite:PATH, or mysql://USER:PASS@tcp(HOST:PORT)/DB")
}

// openDB opens the database and brings its schema up to date.
func openDB(ctx context.Context, dsn string) (*database.DB, error) {
	db, err := database.Open(dsn)
	if err != nil {
		return nil, err
	}
	if err := migrations.Apply(ctx, db, slog.New(slog.DiscardHandler)); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// requireUser checks the --user of a command about one user.
func requireUser(user string) error {
	if user == "" {
		return Usagef("--user is required")
	}
	return nil
}

func tokenCreate() Command {
	return Command{
		Name:    "token create",
		Summary: "create the user if missing and print one new bearer token, alone, on stdout",
		Detail:  "The token is shown only once; the host keeps only its hash.",
		Setup: func(fs *FlagSet) Runner {
			user := fs.String("user", "PLUGINHOST_TOKEN_USER", "", "user name (required)")
			admin := fs.Bool("admin", "PLUGINHOST_TOKEN_ADMIN", false, "make the user an admin")
			ttl := fs.Duration("ttl", "PLUGINHOST_TOKEN_TTL", 0, 0, auth.MaxTTL, "time to live, such as 720h (0: never expires)")
			dsn := DBFlag(fs)
			return func(ctx context.Context, out IO, args []string) error {
				if err := requireUser(*user); err != nil {
					return err
				}
				if *ttl > 0 && *ttl < time.Second {
					return Usagef("--ttl must be at least 1s, or 0 for a token that never expires")
				}
				db, err := openDB(ctx, *dsn)
				if err != nil {
					return err
				}
				defer db.Close()
				token, info, err := (&auth.Service{DB: db}).Create(ctx, auth.NewToken{User: *user, Admin: *admin, TTL: *ttl})
				if err != nil {
					return err
				}
				fmt.Fprintln(out.Stdout, token)
				expires := "never expires"
				if info.ExpiresAt != nil {
					expires = "expires " + models.FormatTime(*info.ExpiresAt)
				}
				fmt.Fprintf(out.Stderr, "token %s created for user %s (%s, admin: %t), %s; it is shown only once\n",
					info.ID, info.UserName, info.UserID, info.UserAdmin, expires)
				return nil
			}
		},
	}
}

func tokenList() Command {
	return Command{
		Name:    "token list",
		Summary: "list a user's tokens, newest first: id, state, created, expires, last used",
		Detail: "A token's last use is recorded at most once a minute. Tokens themselves are never shown\n" +
			"again after creation.",
		Setup: func(fs *FlagSet) Runner {
			user := fs.String("user", "PLUGINHOST_TOKEN_USER", "", "user name (required)")
			dsn := DBFlag(fs)
			return func(ctx context.Context, out IO, args []string) error {
				if err := requireUser(*user); err != nil {
					return err
				}
				db, err := openDB(ctx, *dsn)
				if err != nil {
					return err
				}
				defer db.Close()
				var tokens []*models.Token
				page := models.PageArgs{First: new(models.MaxPageSize)}
				for {
					p, err := (&auth.Service{DB: db}).Tokens(ctx, *user, page)
					if err != nil {
						return err
					}
					tokens = append(tokens, p.Nodes()...)
					if !p.PageInfo.HasNextPage {
						break
					}
					page.After = p.PageInfo.EndCursor
				}
				w := tabwriter.NewWriter(out.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tSTATE\tCREATED\tEXPIRES\tLAST USED")
				now := time.Now()
				for _, t := range tokens {
					state := "active"
					switch {
					case t.RevokedAt != nil:
						state = "revoked"
					case !t.Active(now):
						state = "expired"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, state, models.FormatTime(t.CreatedAt), timeOr(t.ExpiresAt, "never"), timeOr(t.LastUsedAt, "never"))
				}
				return w.Flush()
			}
		},
	}
}

func timeOr(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return models.FormatTime(*t)
}

func tokenRevoke() Command {
	return Command{
		Name:    "token revoke",
		Args:    "ID",
		Summary: "revoke a token by its id (from token list)",
		Detail: "Running servers on the same database stop accepting the token, and close its websockets, within\n" +
			auth.RevocationPoll.String() + " (each looks for revoked tokens that often).",
		Setup: func(fs *FlagSet) Runner {
			dsn := DBFlag(fs)
			return func(ctx context.Context, out IO, args []string) error {
				if len(args) != 1 {
					return Usagef("token revoke takes one token id")
				}
				db, err := openDB(ctx, *dsn)
				if err != nil {
					return err
				}
				defer db.Close()
				t, err := (&auth.Service{DB: db}).Revoke(ctx, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(out.Stdout, "token %s of user %s revoked at %s\n", t.ID, t.UserName, models.FormatTime(*t.RevokedAt))
				return nil
			}
		},
	}
}
