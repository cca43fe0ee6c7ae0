"""What ``app.py``'s ``st.App`` adds to the server: no Nagle delay, the warm-up, the map's code
preloaded."""
