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
	waitForALockWait(t, s, deleted)
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

// TestDeleteToolBesideAnUpdateOfAnAttachedAgent: an agent the tool is
// attached to, whose update (holding the agent's row) replaces its tools
// with a list that keeps the tool, while the tool is deleted: both end,
// without a deadlock, and the agent ends with no tools and a new
// updated_at. DeleteTool must not hold the tool's row while it waits for
// the agent's: the update's foreign key waits for the tool's.
func TestDeleteToolBesideAnUpdateOfAnAttachedAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openMigrated(t, "postgres", store.Options{DatabaseURL: testdb.Postgres(t, "deleteattached")})
	acct, err := s.EnsureAccount(ctx, "deleteattached")
	if err != nil {
		t.Fatal(err)
	}
	tool := &store.Tool{AccountID: acct.ID, CatalogName: "browser", Name: "browser", State: "configured", Config: "{}"}
	if err := s.CreateTool(ctx, tool); err != nil {
		t.Fatal(err)
	}
	a := &store.Agent{AccountID: acct.ID, Name: "a", Status: "draft", Tools: []int64{tool.ID}}
	if err := s.CreateAgent(ctx, a); err != nil {
		t.Fatal(err)
	}

	// The agent's update, as UpdateAgent writes it, up to the insert of
	// its new list.
	updated := time.Now().UTC().Truncate(time.Microsecond)
	tx := s.DB().Begin()
	defer tx.Rollback()
	if err := tx.Exec(`UPDATE agents SET updated_at = ? WHERE id = ?`, updated, a.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := tx.Exec(`DELETE FROM agent_tools WHERE agent_id = ?`, a.ID).Error; err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() {
		_, err := s.DeleteTool(ctx, acct.ID, tool.ID)
		deleted <- err
	}()
	waitForALockWait(t, s, deleted)
	if err := tx.Exec(`INSERT INTO agent_tools (agent_id, tool_id, position) VALUES (?, ?, 0)`, a.ID, tool.ID).Error; err != nil {
		t.Fatalf("the update's insert beside DeleteTool: %v", err)
	}
	if err := tx.Commit().Error; err != nil {
		t.Fatalf("the update's commit beside DeleteTool: %v", err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("DeleteTool: %v", err)
	}
	got, err := s.GetAgent(ctx, acct.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 0 || !got.UpdatedAt.After(updated) {
		t.Fatalf("the agent after the delete: tools %v, updated_at %v; want none, later than the update's %v", got.Tools, got.UpdatedAt, updated)
	}
}

// waitForALockWait waits until a session of s's database waits for a lock,
// failing if deleted answers first.
func waitForALockWait(t *testing.T, s *store.Store, deleted <-chan error) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		if err := s.DB().Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).
			Scan(&waiting).Error; err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		select {
		case err := <-deleted:
			t.Fatalf("DeleteTool returned %v without waiting for the update", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("DeleteTool never waited for the update")
		}
	}
}
