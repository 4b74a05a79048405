"""A request's use cases, end to end: a requester's sheet submitted (submissions), new supplier
terms imported and the waiting POs they reprice (new_terms), an approver's edit approved in
one go (edits), and the review view of one PO that the Mini App shows (po_view).

The top layer of core: may import any other part."""
