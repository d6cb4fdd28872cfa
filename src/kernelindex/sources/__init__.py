"""Sources: fetch (through a transport) → snapshot → parse → normalize → reconcile → report → publish."""
