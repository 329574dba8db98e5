"""The controller: validates operations into records, commits them, and replays them into images."""
