/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Red-black tree: insertion and deletion with rebalancing, as in any
 * textbook (Cormen et al., chapter 13), with NULL leaves and parent links.
 */
#include "mq-deadline-rbtree.h"

static bool is_red(const struct dd_rb_node *n)
{
	return n && n->red;
}

/* Make child take old's place under old's parent. */
static void replace_child(struct dd_rb_root *root, struct dd_rb_node *old,
			  struct dd_rb_node *child)
{
	struct dd_rb_node *parent = old->parent;

	if (!parent)
		root->node = child;
	else if (parent->left == old)
		parent->left = child;
	else
		parent->right = child;
	if (child)
		child->parent = parent;
}

static void rotate_left(struct dd_rb_root *root, struct dd_rb_node *x)
{
	struct dd_rb_node *y = x->right;

	x->right = y->left;
	if (y->left)
		y->left->parent = x;
	replace_child(root, x, y);
	y->left = x;
	x->parent = y;
}

static void rotate_right(struct dd_rb_root *root, struct dd_rb_node *x)
{
	struct dd_rb_node *y = x->left;

	x->left = y->right;
	if (y->right)
		y->right->parent = x;
	replace_child(root, x, y);
	y->right = x;
	x->parent = y;
}

void dd_rb_insert_color(struct dd_rb_node *node, struct dd_rb_root *root)
{
	struct dd_rb_node *parent, *gparent, *uncle;

	while ((parent = node->parent) && parent->red) {
		/* A red parent is never the root: gparent exists. */
		gparent = parent->parent;
		if (parent == gparent->left) {
			uncle = gparent->right;
			if (is_red(uncle)) {
				parent->red = uncle->red = false;
				gparent->red = true;
				node = gparent;
				continue;
			}
			if (node == parent->right) {
				rotate_left(root, parent);
				node = parent;
				parent = node->parent;
			}
			parent->red = false;
			gparent->red = true;
			rotate_right(root, gparent);
		} else {
			uncle = gparent->left;
			if (is_red(uncle)) {
				parent->red = uncle->red = false;
				gparent->red = true;
				node = gparent;
				continue;
			}
			if (node == parent->left) {
				rotate_right(root, parent);
				node = parent;
				parent = node->parent;
			}
			parent->red = false;
			gparent->red = true;
			rotate_left(root, gparent);
		}
	}
	root->node->red = false;
}

/* x (maybe NULL) under parent carries an extra black: push it up. */
static void erase_fixup(struct dd_rb_root *root, struct dd_rb_node *x,
			struct dd_rb_node *parent)
{
	struct dd_rb_node *w;

	while (x != root->node && !is_red(x)) {
		if (x == parent->left) {
			w = parent->right;
			if (w->red) {
				w->red = false;
				parent->red = true;
				rotate_left(root, parent);
				w = parent->right;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				w->red = true;
				x = parent;
				parent = x->parent;
				continue;
			}
			if (!is_red(w->right)) {
				w->left->red = false;
				w->red = true;
				rotate_right(root, w);
				w = parent->right;
			}
			w->red = parent->red;
			parent->red = false;
			w->right->red = false;
			rotate_left(root, parent);
		} else {
			w = parent->left;
			if (w->red) {
				w->red = false;
				parent->red = true;
				rotate_right(root, parent);
				w = parent->left;
			}
			if (!is_red(w->left) && !is_red(w->right)) {
				w->red = true;
				x = parent;
				parent = x->parent;
				continue;
			}
			if (!is_red(w->left)) {
				w->right->red = false;
				w->red = true;
				rotate_left(root, w);
				w = parent->left;
			}
			w->red = parent->red;
			parent->red = false;
			w->left->red = false;
			rotate_right(root, parent);
		}
		x = root->node;
		break;
	}
	if (x)
		x->red = false;
}

void dd_rb_erase(struct dd_rb_node *node, struct dd_rb_root *root)
{
	struct dd_rb_node *x, *parent, *y;
	bool removed_red;

	if (!node->left || !node->right) {
		x = node->left ? node->left : node->right;
		parent = node->parent;
		removed_red = node->red;
		replace_child(root, node, x);
	} else {
		/* y, node's successor, takes node's place and colour. */
		y = node->right;
		while (y->left)
			y = y->left;
		removed_red = y->red;
		x = y->right;
		if (y->parent == node) {
			parent = y;
		} else {
			parent = y->parent;
			replace_child(root, y, x);
			y->right = node->right;
			y->right->parent = y;
		}
		replace_child(root, node, y);
		y->left = node->left;
		y->left->parent = y;
		y->red = node->red;
	}
	if (!removed_red)
		erase_fixup(root, x, parent);
	node->parent = node->left = node->right = NULL;
}

struct dd_rb_node *dd_rb_first(const struct dd_rb_root *root)
{
	struct dd_rb_node *n = root->node;

	if (!n)
		return NULL;
	while (n->left)
		n = n->left;
	return n;
}

struct dd_rb_node *dd_rb_next(const struct dd_rb_node *node)
{
	const struct dd_rb_node *n = node;
	struct dd_rb_node *parent;

	if (n->right) {
		n = n->right;
		while (n->left)
			n = n->left;
		return (struct dd_rb_node *)n;
	}
	while ((parent = n->parent) && n == parent->right)
		n = parent;
	return parent;
}

struct dd_rb_node *dd_rb_prev(const struct dd_rb_node *node)
{
	const struct dd_rb_node *n = node;
	struct dd_rb_node *parent;

	if (n->left) {
		n = n->left;
		while (n->right)
			n = n->right;
		return (struct dd_rb_node *)n;
	}
	while ((parent = n->parent) && n == parent->left)
		n = parent;
	return parent;
}

static int check_subtree(const struct dd_rb_node *n,
			 const struct dd_rb_node *parent)
{
	int l, r;

	if (!n)
		return 1;
	if (n->parent != parent)
		return -1;
	if (n->red && (is_red(n->left) || is_red(n->right)))
		return -1;
	l = check_subtree(n->left, n);
	r = check_subtree(n->right, n);
	if (l < 0 || r < 0 || l != r)
		return -1;
	return l + !n->red;
}

int dd_rb_check(const struct dd_rb_root *root)
{
	if (is_red(root->node))
		return -1;
	return check_subtree(root->node, NULL);
}
