// SPDX-License-Identifier: GPL-2.0
#include <pthread.h>
#include <string.h>

#include "tlog.h"

static struct {
	pthread_mutex_t lock;
	char text[1 << 16];
	size_t len;
} captured = {.lock = PTHREAD_MUTEX_INITIALIZER};

void tlog_sink(enum mq_log_level level, const char *msg)
{
	size_t n = strlen(msg);

	(void)level;
	pthread_mutex_lock(&captured.lock);
	if (captured.len + n + 2 < sizeof(captured.text)) {
		memcpy(captured.text + captured.len, msg, n);
		captured.len += n;
		captured.text[captured.len++] = '\n';
		captured.text[captured.len] = '\0';
	}
	pthread_mutex_unlock(&captured.lock);
}

void tlog_clear(void)
{
	pthread_mutex_lock(&captured.lock);
	captured.len = 0;
	captured.text[0] = '\0';
	pthread_mutex_unlock(&captured.lock);
}

bool tlog_has(const char *s)
{
	bool found;

	pthread_mutex_lock(&captured.lock);
	found = strstr(captured.text, s) != NULL;
	pthread_mutex_unlock(&captured.lock);
	return found;
}

const char *tlog_text(void)
{
	return captured.text;
}
