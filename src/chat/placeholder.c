/* Replaced by the chat template sources. */
int hr_chat_placeholder(void);
int hr_chat_placeholder(void) { return 0; }
