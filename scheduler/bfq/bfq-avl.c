// SPDX-License-Identifier: GPL-2.0
/*
 * Intrusive AVL tree, see bfq-avl.h.  Insert and erase recurse down the
 * search path and rebalance on the way back up, so every node whose
 * subtree changed gets its height and augmented data recomputed.
 */
#include "bfq-avl.h"

static inline int height(const struct bfq_avl_node *n)
{
	return n ? n->height : 0;
}

static void fix(struct bfq_avl_node *n, const struct bfq_avl_ops *ops)
{
	int hl = height(n->left), hr = height(n->right);

	n->height = (hl > hr ? hl : hr) + 1;
	if (ops->update)
		ops->update(n);
}

static struct bfq_avl_node *rotate_right(struct bfq_avl_node *n,
					 const struct bfq_avl_ops *ops)
{
	struct bfq_avl_node *l = n->left;

	n->left = l->right;
	l->right = n;
	fix(n, ops);
	fix(l, ops);
	return l;
}

static struct bfq_avl_node *rotate_left(struct bfq_avl_node *n,
					const struct bfq_avl_ops *ops)
{
	struct bfq_avl_node *r = n->right;

	n->right = r->left;
	r->left = n;
	fix(n, ops);
	fix(r, ops);
	return r;
}

static struct bfq_avl_node *balance(struct bfq_avl_node *n,
				    const struct bfq_avl_ops *ops)
{
	int bf = height(n->left) - height(n->right);

	if (bf > 1) {
		if (height(n->left->left) < height(n->left->right))
			n->left = rotate_left(n->left, ops);
		return rotate_right(n, ops);
	}
	if (bf < -1) {
		if (height(n->right->right) < height(n->right->left))
			n->right = rotate_right(n->right, ops);
		return rotate_left(n, ops);
	}
	fix(n, ops);
	return n;
}

static struct bfq_avl_node *insert(struct bfq_avl_node *t,
				   struct bfq_avl_node *n,
				   const struct bfq_avl_ops *ops)
{
	if (!t) {
		n->left = n->right = NULL;
		fix(n, ops);
		return n;
	}
	if (ops->cmp(n, t) < 0)
		t->left = insert(t->left, n, ops);
	else
		t->right = insert(t->right, n, ops);
	return balance(t, ops);
}

void bfq_avl_insert(struct bfq_avl_root *root, struct bfq_avl_node *n,
		    const struct bfq_avl_ops *ops)
{
	root->node = insert(root->node, n, ops);
}

static struct bfq_avl_node *remove_min(struct bfq_avl_node *t,
				       struct bfq_avl_node **min,
				       const struct bfq_avl_ops *ops)
{
	if (!t->left) {
		*min = t;
		return t->right;
	}
	t->left = remove_min(t->left, min, ops);
	return balance(t, ops);
}

static struct bfq_avl_node *erase(struct bfq_avl_node *t,
				  struct bfq_avl_node *n,
				  const struct bfq_avl_ops *ops)
{
	struct bfq_avl_node *min, *rest;
	int c;

	if (!t)
		return NULL; /* not in the tree: a caller bug, keep going */
	if (t == n) {
		if (!t->left)
			return t->right;
		if (!t->right)
			return t->left;
		rest = remove_min(t->right, &min, ops);
		min->left = t->left;
		min->right = rest;
		return balance(min, ops);
	}
	c = ops->cmp(n, t);
	if (c < 0)
		t->left = erase(t->left, n, ops);
	else
		t->right = erase(t->right, n, ops);
	return balance(t, ops);
}

void bfq_avl_erase(struct bfq_avl_root *root, struct bfq_avl_node *n,
		   const struct bfq_avl_ops *ops)
{
	root->node = erase(root->node, n, ops);
	n->left = n->right = NULL;
	n->height = 0;
}

struct bfq_avl_node *bfq_avl_first(const struct bfq_avl_root *root)
{
	struct bfq_avl_node *n = root->node;

	while (n && n->left)
		n = n->left;
	return n;
}

struct bfq_avl_node *bfq_avl_last(const struct bfq_avl_root *root)
{
	struct bfq_avl_node *n = root->node;

	while (n && n->right)
		n = n->right;
	return n;
}

struct bfq_avl_node *bfq_avl_next(const struct bfq_avl_root *root,
				  const struct bfq_avl_node *n,
				  const struct bfq_avl_ops *ops)
{
	struct bfq_avl_node *t = root->node, *succ = NULL;

	while (t) {
		if (t != n && ops->cmp(n, t) < 0) {
			succ = t;
			t = t->left;
		} else {
			t = t->right;
		}
	}
	return succ;
}

struct bfq_avl_node *bfq_avl_prev(const struct bfq_avl_root *root,
				  const struct bfq_avl_node *n,
				  const struct bfq_avl_ops *ops)
{
	struct bfq_avl_node *t = root->node, *pred = NULL;

	while (t) {
		if (t != n && ops->cmp(n, t) > 0) {
			pred = t;
			t = t->right;
		} else {
			t = t->left;
		}
	}
	return pred;
}
