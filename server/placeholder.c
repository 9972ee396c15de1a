/* Replaced by the server sources. */
int hr_server_placeholder(void);
int hr_server_placeholder(void) { return 0; }
