"""Cython kernel of the main-text walk (dedup.maintext holds the definition, ``_Blocks``,
and runs it where this kernel is not built; both give the same blocks).

The walk reads libxml2's tree itself, through lxml's public C API (``lxml.includes``): an
element's name, attributes, text and tail are struct fields read in C, and a Python
element (lxml's proxy, the very object lxml hands out for that node) is made only for the
elements a block names and the listing's parents. Every string the definition compares or
keeps is the same Python string here, and every test it makes is made in the same order.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport strcmp, strlen

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree
from lxml.includes.tree cimport xmlAttr, xmlNode

cetree.import_lxml__etree()


cdef inline bint _element_like(xmlNode* c) noexcept:
    """What lxml iterates as an element's children (elements, comments, processing
    instructions, entity references); text nodes are text and tails."""
    return c.type == tree.XML_ELEMENT_NODE or c.type == tree.XML_COMMENT_NODE \
        or c.type == tree.XML_PI_NODE or c.type == tree.XML_ENTITY_REF_NODE


cdef inline str _utf8(const char* s):
    return PyUnicode_DecodeUTF8(s, strlen(s), NULL)


cdef object _collect(xmlNode* c):
    """lxml's text of a node run (an element's ``text`` from its first child, a ``tail``
    from its next sibling): the text and CDATA nodes from ``c`` on, joined; ``None`` when
    there are none."""
    while c is not NULL and (c.type == tree.XML_XINCLUDE_START
                             or c.type == tree.XML_XINCLUDE_END):
        c = c.next
    if c is NULL or (c.type != tree.XML_TEXT_NODE and c.type != tree.XML_CDATA_SECTION_NODE):
        return None
    cdef xmlNode* n = c.next
    while n is not NULL and (n.type == tree.XML_XINCLUDE_START
                             or n.type == tree.XML_XINCLUDE_END):
        n = n.next
    if n is NULL or (n.type != tree.XML_TEXT_NODE and n.type != tree.XML_CDATA_SECTION_NODE):
        return _utf8(<const char*>c.content) if c.content is not NULL else ""
    cdef bytearray joined = bytearray()
    while c is not NULL:
        if c.type == tree.XML_TEXT_NODE or c.type == tree.XML_CDATA_SECTION_NODE:
            if c.content is not NULL:
                joined += (<const char*>c.content)[:strlen(<const char*>c.content)]
        elif c.type != tree.XML_XINCLUDE_START and c.type != tree.XML_XINCLUDE_END:
            break
        c = c.next
    return joined.decode("utf-8")


cdef class Walk:
    """The blocks of one element's subtree, as ``dedup.maintext._Blocks`` gives them."""

    cdef public list blocks, parents
    cdef public int containers
    cdef public set not_text, footers
    cdef list parts
    cdef Py_ssize_t link_chars
    cdef str tag
    cdef xmlNode* element
    cdef object element_proxy
    cdef int opened, outside
    cdef tuple furniture
    cdef cetree._Document doc
    cdef frozenset unread, block_tags, furniture_tags, container_tags
    cdef dict kinds
    cdef object kind_of, hidden_style
    cdef int max_depth, not_text_kind

    def __init__(self, root, unread, block_tags, furniture_tags, container_tags, dict kinds,
                 kind_of, hidden_style, int max_depth, int not_text_kind):
        cdef cetree._Element top = <cetree._Element?>root
        self.doc = top._doc
        self.unread, self.block_tags = unread, block_tags
        self.furniture_tags, self.container_tags = furniture_tags, container_tags
        self.kinds, self.kind_of, self.hidden_style = kinds, kind_of, hidden_style
        self.max_depth, self.not_text_kind = max_depth, not_text_kind
        self.blocks, self.parts, self.parents = [], [], []
        self.link_chars = 0
        self.tag, self.element, self.element_proxy = "body", top._c_node, root
        self.opened = self.outside = self.containers = 0
        self.furniture = ()
        self.not_text = set()
        self.footers = set()
        self._walk(top._c_node, False, 0, root)
        self._flush("body", top._c_node, root)

    cdef object _proxy(self, xmlNode* c):
        return cetree.elementFactory(self.doc, c)

    cdef void _flush(self, str tag, xmlNode* element, object proxy) except *:
        if self.parts:
            text = " ".join(" ".join(self.parts).split())
            if text:
                if self.element_proxy is None and self.element is not NULL:
                    self.element_proxy = self._proxy(self.element)
                self.blocks.append((text, self.link_chars, self.tag, self.opened,
                                    self.furniture, self.element_proxy))
                self.opened = 0
            self.parts, self.link_chars = [], 0
        self.tag, self.element, self.element_proxy = tag, element, proxy

    cdef object _get(self, xmlNode* c, const char* name):
        """lxml's ``element.get(name)`` for a name without a namespace."""
        cdef xmlAttr* a = c.properties
        while a is not NULL:
            if a.ns is NULL and strcmp(<const char*>a.name, name) == 0:
                if a.children is NULL:
                    return ""
                if a.children.next is NULL and a.children.type == tree.XML_TEXT_NODE:
                    return _utf8(<const char*>a.children.content) \
                        if a.children.content is not NULL else ""
                return self._proxy(c).get(name.decode("ascii"))  # entities: as lxml reads
            a = a.next
        return None

    cdef str _tag(self, xmlNode* c):
        if c.ns is NULL or c.ns.href is NULL:
            return _utf8(<const char*>c.name)
        return self._proxy(c).tag  # a namespaced name, "{uri}name", as lxml spells it

    cdef void _walk(self, xmlNode* c, bint in_link, int depth, object proxy) except *:
        if c.type != tree.XML_ELEMENT_NODE:  # a comment or a processing instruction
            return
        cdef str tag = self._tag(c)
        self.opened += 1
        if tag in self.unread:
            return
        cdef bint panel = self._get(c, b"role") == "tabpanel"  # a tab's: read, shown or not
        if not panel and (self._get(c, b"hidden") is not None
                          or self._get(c, b"aria-hidden") == "true"
                          or self._get(c, b"aria-modal") == "true"
                          or self._get(c, b"popover") is not None
                          or tag == "dialog" and self._get(c, b"open") is None):
            return
        style = self._get(c, b"style")
        if style and not panel and self.hidden_style(style) is not None:
            return
        cdef bint block = tag in self.block_tags
        if block:
            self._flush(tag, c, proxy)
        cdef tuple outer = self.furniture
        cdef bint by_tag = tag in self.furniture_tags
        cdef bint furniture = by_tag
        cdef xmlNode* child
        cdef int children
        if by_tag:
            self.outside += 1
        elif not self.outside:
            children = 0
            child = c.children
            while child is not NULL and children < 3:
                if _element_like(child):
                    children += 1
                child = child.next
            if children >= 3:
                self.parents.append(proxy if proxy is not None else self._proxy(c))
        if not furniture and tag in self.container_tags:
            for name in (self._get(c, b"class"), self._get(c, b"id"), self._get(c, b"role")):
                if name:
                    kind = self.kinds.get(name)
                    if kind is None:
                        kind = self.kind_of(name)
                    if kind:
                        furniture = True
                        if kind == self.not_text_kind:
                            self.not_text.add(self.containers + 1)
        if furniture:
            self.containers += 1
            self.furniture = (*outer, self.containers)
            if tag == "footer" or self._get(c, b"role") == "contentinfo":
                self.footers.add(self.containers)
        elif tag == "article" and outer:  # a composition of its own: text wherever it sits
            self.furniture = tuple(f for f in outer if f in self.not_text)  # but the readers'
        in_link = in_link or tag == "a"
        parts = self.parts
        text = _collect(c.children)
        if depth >= self.max_depth:  # deeper than a recursive walk goes: the text as it is
            text = " ".join((proxy if proxy is not None else self._proxy(c)).itertext())
        if text:
            parts.append(text)
            if in_link:
                self.link_chars += len(text.strip())
        if depth < self.max_depth:
            child = c.children
            while child is not NULL:
                if _element_like(child):
                    self._walk(child, in_link, depth + 1, None)
                    text = _collect(child.next)
                    if text:
                        self.parts.append(text)  # a flush in the walk replaced the list
                        if in_link:
                            self.link_chars += len(text.strip())
                child = child.next
        cdef xmlNode* parent
        if block or furniture:
            parent = c.parent
            if parent is not NULL and _element_like(parent):
                self._flush(self._tag(parent), parent, None)
            else:
                self._flush("body", NULL, None)
        if by_tag:
            self.outside -= 1
        self.furniture = outer
