//! worker_client (to be written).
