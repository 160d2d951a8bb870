"""The page helpers: what the Streamlit pages (``pages/``) share. Login and roles, the
navigation, the sidebar's filters, cached reads and figures, tables, downloads, messages,
kept widget state, the start-up warm-up and the analysis pages' default views. Of the
project it imports only ``elitr_core``; nothing here imports a page."""
