package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
)

// TestDeleteToolBumpsAnAgentAttachingItMeanwhile: a tool deleted while an
// agent's update attaching it has not yet committed is detached from that
// agent too (the cascade), and the agent's updated_at says so: it is later
// than the update's. Before, DeleteTool picked the agents to bump before it
// waited for the tool's row, so it missed the one the update attached, and
// that agent's tools changed under an updated_at that did not.
func TestDeleteToolBumpsAnAgentAttachingItMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openMigrated(t, "postgres", store.Options{DatabaseURL: testdb.Postgres(t, "deleterace")})
	acct, err := s.EnsureAccount(ctx, "deleterace")
	if err != nil {
		t.Fatal(err)
	}
	tool := &store.Tool{AccountID: acct.ID, CatalogName: "browser", Name: "browser", State: "configured", Config: "{}"}
	if err := s.CreateTool(ctx, tool); err != nil {
		t.Fatal(err)
	}
	a := &store.Agent{AccountID: acct.ID, Name: "a", Status: "draft"}
	if err := s.CreateAgent(ctx, a); err != nil {
		t.Fatal(err)
	}

	// The agent's update, as UpdateAgent writes it, attaching the tool,
	// not committed yet.
	attached := time.Now().UTC().Truncate(time.Microsecond)
	tx := s.DB().Begin()
	if err := tx.Exec(`UPDATE agents SET updated_at = ? WHERE id = ?`, attached, a.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := tx.Exec(`INSERT INTO agent_tools (agent_id, tool_id, position) VALUES (?, ?, 0)`, a.ID, tool.ID).Error; err != nil {
		t.Fatal(err)
	}

	deleted := make(chan error, 1)
	go func() {
		_, err := s.DeleteTool(ctx, acct.ID, tool.ID)
		deleted <- err
	}()
	// Until the delete waits for the update's lock.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var waiting int
		if err := s.DB().Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).
			Scan(&waiting).Error; err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-deleted:
			t.Fatalf("DeleteTool returned %v without waiting for the update attaching the tool", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("DeleteTool never waited for the update attaching the tool")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("DeleteTool: %v", err)
	}
	got, err := s.GetAgent(ctx, acct.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 0 {
		t.Fatalf("the agent's tools after the delete: %v, want none", got.Tools)
	}
	if !got.UpdatedAt.After(attached) {
		t.Fatalf("the agent's updated_at %v after the tool it attached was deleted, want later than the attach's %v", got.UpdatedAt, attached)
	}
}
