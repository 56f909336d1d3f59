package migrations

import (
	"encoding/json"

	"gorm.io/gorm"

	"pluginhost/models"
)

// Version 15: plugins and OAuth clients stay with their publishers. A plugin
// id belongs, on this server, to the publisher key that first installed it:
// plugin_owners records it, and every plugin id installed before adopts the
// key of its oldest Installation. An OAuth client goes only to the URLs the
// plugin's manifest named when the admin set it: oauth_clients keeps them,
// and a client set before adopts the URLs of the newest version installed
// of its plugin signed by the owner (none: the client is unusable until the
// admin sets it again). An authorization starts as a link on this
// server (oauth_states without a browser) and, once a browser signed in as
// its user opens it, becomes the provider's state bound to that browser by
// the hash of a cookie.

type pluginOwner15 struct {
	PluginID       string `gorm:"primaryKey;type:varchar(128)"`
	PublisherKeyID string `gorm:"type:varchar(64);not null"`
	CreatedAt      int64  `gorm:"not null"`
}

func (pluginOwner15) TableName() string { return "plugin_owners" }

type oauthClient15 struct {
	PluginID     string `gorm:"primaryKey;type:varchar(128)"`
	Connection   string `gorm:"primaryKey;type:varchar(64)"`
	ClientID     string `gorm:"type:varchar(512);not null"`
	ClientSecret []byte `gorm:"type:blob;not null"`
	UpdatedAt    int64  `gorm:"not null"`
	// AuthorizationURL and TokenURL are the connection's URLs in the
	// manifest the admin set the client for; the client goes nowhere else.
	AuthorizationURL string `gorm:"type:varchar(2048);not null;default:''"`
	TokenURL         string `gorm:"type:varchar(2048);not null;default:''"`
}

func (oauthClient15) TableName() string { return "oauth_clients" }

type oauthState15 struct {
	State string `gorm:"primaryKey;type:varchar(128)"`
	// Browser is the hash of the state cookie of the browser that opened
	// the start link; empty while the link is not opened.
	Browser string `gorm:"type:varchar(64);not null;default:''"`
}

func (oauthState15) TableName() string { return "oauth_states" }

func publishers(tx *gorm.DB) error {
	m := tx.Migrator()
	if err := m.CreateTable(&pluginOwner15{}); err != nil {
		return err
	}
	// The oldest Installation of each plugin id (by creation, then id)
	// names its owner.
	if err := tx.Exec(`INSERT INTO plugin_owners (plugin_id, publisher_key_id, created_at)
		SELECT i.plugin_id, i.publisher_key_id, i.created_at FROM installations i
		WHERE NOT EXISTS (SELECT 1 FROM installations j WHERE j.plugin_id = i.plugin_id
			AND (j.created_at < i.created_at OR j.created_at = i.created_at AND j.id < i.id))`).Error; err != nil {
		return err
	}
	for _, col := range []string{"AuthorizationURL", "TokenURL"} {
		if err := m.AddColumn(&oauthClient15{}, col); err != nil {
			return err
		}
	}
	if err := m.AddColumn(&oauthState15{}, "Browser"); err != nil {
		return err
	}
	var clients []struct{ PluginID, Connection string }
	if err := tx.Raw("SELECT plugin_id, connection FROM oauth_clients").Scan(&clients).Error; err != nil {
		return err
	}
	for _, c := range clients {
		const owned = `FROM installations i JOIN plugin_owners o ON o.plugin_id = i.plugin_id
			AND o.publisher_key_id = i.publisher_key_id WHERE i.plugin_id = ? AND i.status = 'installed'`
		var versions []string
		if err := tx.Raw("SELECT DISTINCT i.version "+owned, c.PluginID).Scan(&versions).Error; err != nil {
			return err
		}
		if len(versions) == 0 {
			continue // no installed package: the admin sets the client again
		}
		newest := versions[0]
		for _, v := range versions[1:] {
			if models.CompareVersions(v, newest) > 0 {
				newest = v
			}
		}
		var manifests []string
		if err := tx.Raw("SELECT i.manifest "+owned+" AND i.version = ? ORDER BY i.updated_at DESC, i.id LIMIT 1", c.PluginID, newest).
			Scan(&manifests).Error; err != nil || len(manifests) == 0 {
			return err
		}
		manifest := manifests[0]
		var parsed struct {
			Connections []struct {
				ID     string `json:"id"`
				OAuth2 *struct {
					AuthorizationURL string `json:"authorization_url"`
					TokenURL         string `json:"token_url"`
				} `json:"oauth2"`
			} `json:"connections"`
		}
		if json.Unmarshal([]byte(manifest), &parsed) != nil {
			continue
		}
		for _, conn := range parsed.Connections {
			if conn.ID != c.Connection || conn.OAuth2 == nil {
				continue
			}
			if err := tx.Exec("UPDATE oauth_clients SET authorization_url = ?, token_url = ? WHERE plugin_id = ? AND connection = ?",
				conn.OAuth2.AuthorizationURL, conn.OAuth2.TokenURL, c.PluginID, c.Connection).Error; err != nil {
				return err
			}
		}
	}
	return nil
}
