package store

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// Agent is an agent row; Tools is filled from agent_tools in order.
type Agent struct {
	ID        int64
	AccountID int64
	Name      string
	Goal      string
	Status    string
	CreatedAt time.Time
	UpdatedAt time.Time
	Tools     []int64 `gorm:"-"`
}

type agentTool struct {
	AgentID  int64
	ToolID   int64
	Position int
}

func (agentTool) TableName() string { return "agent_tools" }

// CreateAgent inserts a and its tool list in one transaction.
func (s *Store) CreateAgent(ctx context.Context, a *Agent) error {
	now := time.Now().UTC()
	a.CreatedAt, a.UpdatedAt = now, now
	return interpretWrite(s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(a).Error; err != nil {
			return err
		}
		return setAgentTools(tx, a.ID, a.Tools)
	}))
}

func setAgentTools(tx *gorm.DB, agentID int64, tools []int64) error {
	if err := tx.Where("agent_id = ?", agentID).Delete(&agentTool{}).Error; err != nil {
		return err
	}
	if len(tools) == 0 {
		return nil
	}
	rows := make([]agentTool, len(tools))
	for i, id := range tools {
		rows[i] = agentTool{AgentID: agentID, ToolID: id, Position: i}
	}
	return tx.Create(&rows).Error
}

// AgentUpdate holds the fields to change; nil means unchanged.
type AgentUpdate struct {
	Name   *string
	Goal   *string
	Status *string
	Tools  *[]int64
}

// UpdateAgent applies u to the account's agent and returns it.
func (s *Store) UpdateAgent(ctx context.Context, accountID, id int64, u AgentUpdate) (*Agent, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		set := map[string]any{"updated_at": time.Now().UTC()}
		if u.Name != nil {
			set["name"] = *u.Name
		}
		if u.Goal != nil {
			set["goal"] = *u.Goal
		}
		if u.Status != nil {
			set["status"] = *u.Status
		}
		res := tx.Model(&Agent{}).Where("id = ? AND account_id = ?", id, accountID).Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return gorm.ErrRecordNotFound
		}
		if u.Tools != nil {
			return setAgentTools(tx, id, *u.Tools)
		}
		return nil
	})
	if err != nil {
		return nil, interpretWrite(err)
	}
	return s.GetAgent(ctx, accountID, id)
}

// GetAgent returns the account's agent with its tools.
func (s *Store) GetAgent(ctx context.Context, accountID, id int64) (*Agent, error) {
	var a Agent
	err := s.again(ctx, func() error {
		return s.db.WithContext(ctx).Where("id = ? AND account_id = ?", id, accountID).Take(&a).Error
	})
	if err != nil {
		return nil, interpret(err)
	}
	as := []Agent{a}
	if err := s.fillAgentTools(ctx, as); err != nil {
		return nil, err
	}
	return &as[0], nil
}

// ListAgents returns one page of the account's agents and the next cursor,
// read settled: a page never misses an agent created after an earlier page
// was read.
func (s *Store) ListAgents(ctx context.Context, accountID int64, p Page) ([]Agent, string, error) {
	var as []Agent
	err := s.settled(ctx, "agents", func(db *gorm.DB, horizon int64) error {
		as = nil
		return db.Where("account_id = ? AND id > ? AND id <= ?", accountID, p.After, horizon).Order("id").Limit(p.Limit + 1).Find(&as).Error
	})
	if err != nil {
		return nil, "", interpret(err)
	}
	as, next := trim(as, p.Limit, p.List, func(a *Agent) int64 { return a.ID })
	if err := s.fillAgentTools(ctx, as); err != nil {
		return nil, "", err
	}
	return as, next, nil
}

func (s *Store) fillAgentTools(ctx context.Context, as []Agent) error {
	if len(as) == 0 {
		return nil
	}
	ids := make([]int64, len(as))
	idx := make(map[int64]int, len(as))
	for i := range as {
		ids[i] = as[i].ID
		idx[as[i].ID] = i
		as[i].Tools = []int64{}
	}
	var rows []agentTool
	err := s.again(ctx, func() error {
		rows = nil
		return s.db.WithContext(ctx).Where("agent_id IN ?", ids).Order("agent_id, position").Find(&rows).Error
	})
	if err != nil {
		return interpret(err)
	}
	for _, r := range rows {
		a := &as[idx[r.AgentID]]
		a.Tools = append(a.Tools, r.ToolID)
	}
	return nil
}

// DeleteAgent deletes the account's agent.
func (s *Store) DeleteAgent(ctx context.Context, accountID, id int64) error {
	res := s.db.WithContext(ctx).Where("id = ? AND account_id = ?", id, accountID).Delete(&Agent{})
	if res.Error != nil {
		return interpretWrite(res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}
