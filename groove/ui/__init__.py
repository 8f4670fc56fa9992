"""groove's dashboard (`groove ui`): pages over a coordinator's memory, board and agents, live updates,
curator actions and Prometheus `/metrics`. A client like any other: it never opens a tier itself."""
