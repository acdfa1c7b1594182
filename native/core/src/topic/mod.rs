//! Topic routing. (being written)
