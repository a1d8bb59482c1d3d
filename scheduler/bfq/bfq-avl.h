/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small intrusive AVL tree with an optional augmentation hook, for BFQ's
 * ordered sets: the per-queue sector-sorted request lists and the
 * B-WF2Q+ service trees (ordered by virtual finish time, augmented with
 * the minimum virtual start time of each subtree).  Linux uses an
 * rbtree; any balanced tree keeps the operations O(log n).
 *
 * The comparison must be a strict total order: two distinct nodes never
 * compare equal (callers break ties with a sequence number), so a node
 * is found again by its key alone.
 */
#ifndef MQBLK_BFQ_AVL_H
#define MQBLK_BFQ_AVL_H

#include <stddef.h>

struct bfq_avl_node {
	struct bfq_avl_node *left, *right;
	int height;
};

struct bfq_avl_root {
	struct bfq_avl_node *node;
};

struct bfq_avl_ops {
	/* <0, >0; 0 only for the same node */
	int (*cmp)(const struct bfq_avl_node *a, const struct bfq_avl_node *b);
	/* Recompute augmented data of n from n and its children; or NULL. */
	void (*update)(struct bfq_avl_node *n);
};

#define bfq_avl_entry(ptr, type, member)                                       \
	((type *)((char *)(ptr)-offsetof(type, member)))

static inline int bfq_avl_empty(const struct bfq_avl_root *root)
{
	return root->node == NULL;
}

void bfq_avl_insert(struct bfq_avl_root *root, struct bfq_avl_node *n,
		    const struct bfq_avl_ops *ops);
void bfq_avl_erase(struct bfq_avl_root *root, struct bfq_avl_node *n,
		   const struct bfq_avl_ops *ops);
struct bfq_avl_node *bfq_avl_first(const struct bfq_avl_root *root);
struct bfq_avl_node *bfq_avl_last(const struct bfq_avl_root *root);
/* The neighbours of n in key order; n need not be in the tree. */
struct bfq_avl_node *bfq_avl_next(const struct bfq_avl_root *root,
				  const struct bfq_avl_node *n,
				  const struct bfq_avl_ops *ops);
struct bfq_avl_node *bfq_avl_prev(const struct bfq_avl_root *root,
				  const struct bfq_avl_node *n,
				  const struct bfq_avl_ops *ops);

#endif
