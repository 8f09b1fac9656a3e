"""VER / NoVER / sync (DD-PPO) on-policy training for any Gymnasium environment."""
