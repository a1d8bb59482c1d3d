// SPDX-License-Identifier: GPL-2.0
/*
 * Who a handle's I/O comes from, as the core and BFQ see it.
 *
 * nbdkit 1.32 has no connection id, so the plugin numbers its handles
 * (one per OPT_GO, the client's whole session) from 1 and never reuses a
 * number: BFQ keeps a client's state (its io context, weight, group)
 * by id after its I/O is done, and a later connection must not inherit
 * it, as one could when the id was the handle's address.  nbdkit 1.32
 * cannot tell the plugin the TLS identity either.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "plugin.h"

void mqblk_client_init(struct mqblk_handle *h, uint64_t id)
{
	struct mq_client *c = &h->client;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];

	c->id = id;
	c->addr[0] = '\0';
	c->uid = -1;
	c->tls_user[0] = '\0';

	/* Not a socket (nbdkit -s): nbdkit has logged it, the id will do. */
	if (nbdkit_peer_name((struct sockaddr *)&ss, &len) == -1)
		return;
	switch (ss.ss_family) {
	case AF_INET: {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		if (inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip)))
			snprintf(c->addr, sizeof(c->addr), "%s:%u", ip,
				 ntohs(sin->sin_port));
		break;
	}
	case AF_INET6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		if (inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip)))
			snprintf(c->addr, sizeof(c->addr), "[%s]:%u", ip,
				 ntohs(sin6->sin6_port));
		break;
	}
	case AF_UNIX:
		snprintf(c->addr, sizeof(c->addr), "unix");
		c->uid = nbdkit_peer_uid();
		break;
	}
}
