/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small intrusive red-black tree for mq-deadline's sector-sorted lists,
 * shaped like include/linux/rbtree.h: the caller walks down to the link
 * where a node belongs, links it there, then rebalances.  Prefixed dd_ so
 * that other schedulers may carry their own without clashing.
 */
#ifndef MQBLK_MQ_DEADLINE_RBTREE_H
#define MQBLK_MQ_DEADLINE_RBTREE_H

#include <stdbool.h>
#include <stddef.h>

struct dd_rb_node {
	struct dd_rb_node *parent;
	struct dd_rb_node *left;
	struct dd_rb_node *right;
	bool red;
};

struct dd_rb_root {
	struct dd_rb_node *node;
};

#define DD_RB_ROOT ((struct dd_rb_root){NULL})

#define dd_rb_entry(ptr, type, member)                                         \
	((type *)((char *)(ptr)-offsetof(type, member)))

static inline bool dd_rb_empty(const struct dd_rb_root *root)
{
	return root->node == NULL;
}

/* Put node at *link, a child pointer of parent (NULL for the root). */
static inline void dd_rb_link_node(struct dd_rb_node *node,
				   struct dd_rb_node *parent,
				   struct dd_rb_node **link)
{
	node->parent = parent;
	node->left = node->right = NULL;
	node->red = true;
	*link = node;
}

/* Rebalance after dd_rb_link_node(). */
void dd_rb_insert_color(struct dd_rb_node *node, struct dd_rb_root *root);
void dd_rb_erase(struct dd_rb_node *node, struct dd_rb_root *root);

struct dd_rb_node *dd_rb_first(const struct dd_rb_root *root);
struct dd_rb_node *dd_rb_next(const struct dd_rb_node *node);
struct dd_rb_node *dd_rb_prev(const struct dd_rb_node *node);

/*
 * Check the red-black rules and parent links; returns the black height,
 * or -1 if a rule is broken.  For tests.
 */
int dd_rb_check(const struct dd_rb_root *root);

#endif
